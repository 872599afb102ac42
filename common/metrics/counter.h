// Counter: a value that only goes up, such as requests served or bytes sent.
//
// Counters are created by a CounterFamily (family.h), which owns them; a reference to one stays
// valid for the lifetime of its Registry, so hot paths look it up once and keep it.
// Values are in the base unit named by the metric ("_seconds_total", "_bytes_total").
//
// Thread safety: every method may be called from any thread; Inc is a lock-free atomic add.
#pragma once

#include <atomic>

namespace sluice::metrics {

class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `v`. A negative or NaN `v` is ignored rather than a check failure: it would break the
  // counter's monotonicity (and NaN would stick forever), but a metrics glitch such as a
  // negative duration from a clock step must not crash the process.
  void Inc(double v = 1.0) {
    if (!(v >= 0)) return;  // Also catches NaN.
    value_.fetch_add(v, std::memory_order_relaxed);
  }

  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace sluice::metrics
