#include "common/metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/check.h"

namespace sluice::metrics {

Status ValidateBuckets(const std::vector<double>& upper_bounds) {
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    const std::string field = "buckets[" + std::to_string(i) + "]";
    if (!std::isfinite(upper_bounds[i])) {
      return Status::InvalidArgument("bucket bounds must be finite (the +Inf bucket is implicit)",
                                     field);
    }
    if (i > 0 && !(upper_bounds[i] > upper_bounds[i - 1])) {
      return Status::InvalidArgument("bucket bounds must be strictly increasing", field);
    }
  }
  return Status::Ok();
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  SLUICE_CHECK(start > 0 && std::isfinite(start));
  SLUICE_CHECK(factor > 1 && std::isfinite(factor));
  SLUICE_CHECK(count >= 1);
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  SLUICE_CHECK(std::isfinite(start));
  SLUICE_CHECK(width > 0 && std::isfinite(width));
  SLUICE_CHECK(count >= 1);
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    // Multiply rather than accumulate so rounding errors do not build up along the list.
    bounds.push_back(start + width * i);
  }
  return bounds;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(upper_bounds_.size() + 1)) {
  SLUICE_CHECK(ValidateBuckets(upper_bounds_).ok());
}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  const auto it = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), v);
  counts_[static_cast<size_t>(it - upper_bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  snapshot.cumulative_counts.reserve(upper_bounds_.size() + 1);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative_counts.push_back(cumulative);
  }
  snapshot.count = cumulative;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

}  // namespace sluice::metrics
