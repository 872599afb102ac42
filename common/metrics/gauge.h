// Gauge: a value that goes up and down, such as queue depth or bytes in use.
//
// Gauges are created by a GaugeFamily (family.h), which owns them; a reference to one stays
// valid for the lifetime of its Registry, so hot paths look it up once and keep it.
// Values are in the base unit named by the metric ("_seconds", "_bytes").
//
// Thread safety: every method may be called from any thread; all are lock-free atomics.
#pragma once

#include <atomic>

namespace sluice::metrics {

class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }

  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace sluice::metrics
