// Internal to workers/kernels/*.cu: turning CUDA runtime errors into Status.
//
// Kernel entry points launch asynchronously and return as soon as the launch is queued, so the
// Status they return covers argument checks and launch configuration only; a fault inside a
// kernel surfaces at the caller's next synchronisation with the stream.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/status.h"

namespace sluice::kernels::internal {

// Unavailable, as in device.cu: a CUDA failure is the device's or driver's state, not bad input.
inline Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return Status::Unavailable(std::string(what) + ": " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
}

// The Status of the most recent launch on this thread (clears CUDA's last-error slot).
inline Status LaunchStatus(const char* kernel) { return CudaStatus(cudaGetLastError(), kernel); }

}  // namespace sluice::kernels::internal
