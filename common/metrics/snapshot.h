// Point-in-time copies of metric families, as handed from the Registry to an exposition format.
//
// A scrape collects one FamilySnapshot per family; the formatter (exposition.h) only ever sees
// these plain values, never the live atomics, so formats stay independent of how metrics are
// stored. Values are in the metric's own base unit (see names.h).
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::metrics {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram": the spelling of `# TYPE` lines.
std::string_view MetricTypeName(MetricType type);

struct HistogramSnapshot {
  // Upper bounds (inclusive) of the finite buckets, strictly increasing; +Inf is implicit.
  std::vector<double> upper_bounds;
  // Cumulative counts, one per upper bound plus a last one for +Inf, which equals `count`.
  std::vector<uint64_t> cumulative_counts;
  double sum = 0;
  uint64_t count = 0;
};

struct ChildSnapshot {
  // One value per label name of the family, in the same order.
  std::vector<std::string> label_values;
  // Counter and gauge value; unused for histograms.
  double value = 0;
  // Histogram state; empty for counters and gauges.
  HistogramSnapshot histogram;
};

struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::string> label_names;
  // Sorted by label values.
  std::vector<ChildSnapshot> children;
};

}  // namespace sluice::metrics
