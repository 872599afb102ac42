// Histogram: counts observations (latencies, sizes) into buckets fixed at creation.
//
// Each bucket has an inclusive upper bound; a last bucket for +Inf is implicit. Histograms are
// created by a HistogramFamily (family.h), which owns them; a reference to one stays valid for
// the lifetime of its Registry, so hot paths look it up once and keep it. Observations are in
// the base unit named by the metric ("_seconds", "_bytes").
//
// Thread safety: every method may be called from any thread. Observe is lock-free (one atomic
// add on a bucket, one on the sum). A Snapshot taken during concurrent Observe calls derives the
// count from the buckets, so count and the +Inf bucket always agree; the sum may include an
// observation whose bucket is not yet counted, or the other way round.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/metrics/snapshot.h"
#include "common/status.h"

namespace sluice::metrics {

// OK when `upper_bounds` are finite and strictly increasing (an empty list is allowed: only the
// implicit +Inf bucket). +Inf itself must not be listed.
Status ValidateBuckets(const std::vector<double>& upper_bounds);

// `count` bounds: start, start*factor, start*factor^2, ... Requires start > 0, factor > 1 and
// count >= 1 (checked: the arguments are constants in code).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// `count` bounds: start, start+width, start+2*width, ... Requires width > 0 and count >= 1
// (checked).
std::vector<double> LinearBuckets(double start, double width, int count);

class Histogram {
 public:
  // `upper_bounds` must pass ValidateBuckets (checked; the Registry validates them first).
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Counts `v` in the first bucket whose bound is >= v. NaN is ignored: it belongs in no
  // bucket and would turn the sum into NaN for good.
  void Observe(double v);

  HistogramSnapshot Snapshot() const;

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  const std::vector<double> upper_bounds_;
  // Per-bucket (not cumulative) counts, upper_bounds_.size() + 1 of them; the last is +Inf.
  // Non-cumulative so that Observe touches one bucket only.
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

}  // namespace sluice::metrics
