// Metric and label name rules, and the naming conventions the Registry enforces.
//
// Prometheus itself accepts metric names matching [a-zA-Z_:][a-zA-Z0-9_:]* and label names
// matching [a-zA-Z_][a-zA-Z0-9_]*, with label names starting with "__" reserved for Prometheus.
// On top of that the Registry enforces the conventions below, so that every metric Sluice
// exports passes `promtool check metrics` without lint complaints:
//
//   * lower snake_case names and label names (no upper-case letters);
//   * no ':' in metric names (reserved for recording rules);
//   * counters end in "_total"; no other type does;
//   * no name ends in "_bucket", "_sum" or "_count" (histogram series use those);
//   * the label names "le" and "quantile" are reserved (histogram and summary series use them);
//   * non-empty HELP text.
//
// Conventions documented here but not enforced (promtool in CI catches the rest):
//
//   * names start with "sluice_" followed by the component ("sluice_workqueue_depth").
//     Not enforced so that standard names expected by stock dashboards
//     ("process_cpu_seconds_total") remain possible;
//   * values are in base units and the unit is in the name, plural, before "_total":
//     "_seconds" (never ms), "_bytes", "sluice_rpc_sent_bytes_total";
//   * no type in the name ("_gauge", "_counter") and no abbreviated units ("_ms", "_sec").
//
// Thread safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "common/metrics/snapshot.h"
#include "common/status.h"

namespace sluice::metrics {

// The Prometheus data-model rule [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(std::string_view name);
// The Prometheus data-model rule [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__".
bool IsValidLabelName(std::string_view name);

// The data-model rules plus the conventions above, for a family of `type`. The error names the
// offending name in its message and "name" / "label_names[i]" / "help" as its field.
Status ValidateFamily(MetricType type, std::string_view name, std::string_view help,
                      const std::vector<std::string>& label_names);

}  // namespace sluice::metrics
