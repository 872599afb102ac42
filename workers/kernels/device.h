// CUDA device discovery: how many GPUs this process sees and what they are.
//
// Everything here works, and reports zero devices, on a machine without a GPU or driver, so
// callers (and tests, which GTEST_SKIP when no GPU is visible) need no special build.
// Only built when SLUICE_WITH_CUDA is on; no CUDA types leak through this header.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::kernels {

struct DeviceInfo {
  int index = 0;
  std::string name;       // "NVIDIA H100 80GB HBM3".
  int compute_major = 0;  // 9 for Hopper, 8 for Ampere.
  int compute_minor = 0;
  uint64_t total_memory_bytes = 0;
  int multiprocessors = 0;
};

// The number of CUDA devices visible (CUDA_VISIBLE_DEVICES applies); 0 when there is no driver.
int VisibleDeviceCount();

// Details of every visible device.
Result<std::vector<DeviceInfo>> ListDevices();

// out[i] = a * x[i] + y[i] on device 0, copying in and out: a correctness probe for the
// toolchain and the device (a wrong architecture or driver shows up here, not in training).
Result<std::vector<float>> Saxpy(float a, const std::vector<float>& x, const std::vector<float>& y);

}  // namespace sluice::kernels
