// Timing work on a device that runs it asynchronously (CUDA): the clock starts and stops only
// after the device has finished everything queued. On the CPU the syncs are no-ops.
#pragma once

#include <torch/cuda.h>
#include <torch/torch.h>

#include <vector>

#include "bench/bench_support.h"

namespace sluice::bench {

inline void Sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Median seconds of `reps` synchronised runs of fn() after `warmups` untimed ones.
template <typename Fn>
double MedianSeconds(const torch::Device& device, int warmups, int reps, Fn&& fn) {
  for (int i = 0; i < warmups; ++i) fn();
  std::vector<double> runs;
  for (int i = 0; i < reps; ++i) {
    Sync(device);
    const auto t0 = BenchClock::now();
    fn();
    Sync(device);
    runs.push_back(Seconds(t0));
  }
  return Percentile(std::move(runs), 0.5);
}

}  // namespace sluice::bench
