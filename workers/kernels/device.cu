#include <cuda_runtime.h>

#include "workers/kernels/device.h"

namespace sluice::kernels {
namespace {

Status CudaError(cudaError_t err, const char* what) {
  return Status::Unavailable(std::string(what) + ": " + cudaGetErrorString(err));
}

__global__ void SaxpyKernel(int n, float a, const float* x, const float* y, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

}  // namespace

int VisibleDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // Clear the sticky "no driver" error for later calls.
    return 0;
  }
  return count;
}

Result<std::vector<DeviceInfo>> ListDevices() {
  std::vector<DeviceInfo> out;
  const int count = VisibleDeviceCount();
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaError_t err = cudaGetDeviceProperties(&prop, i); err != cudaSuccess) {
      return CudaError(err, "cudaGetDeviceProperties");
    }
    out.push_back(
        {i, prop.name, prop.major, prop.minor, prop.totalGlobalMem, prop.multiProcessorCount});
  }
  return out;
}

Result<std::vector<float>> Saxpy(float a, const std::vector<float>& x,
                                 const std::vector<float>& y) {
  if (x.size() != y.size()) {
    return Status::InvalidArgument("x and y differ in length", "y");
  }
  if (VisibleDeviceCount() == 0) return Status::Unavailable("no CUDA device is visible");
  const int n = static_cast<int>(x.size());
  const size_t bytes = x.size() * sizeof(float);
  // Device buffers freed on every path out.
  struct DeviceBuffers {
    float* x = nullptr;
    float* y = nullptr;
    float* out = nullptr;
    ~DeviceBuffers() {
      cudaFree(x);
      cudaFree(y);
      cudaFree(out);
    }
  } d;
  std::vector<float> out(x.size());
  cudaError_t err = cudaMalloc(&d.x, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&d.y, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&d.out, bytes);
  if (err != cudaSuccess) return CudaError(err, "cudaMalloc");
  err = cudaMemcpy(d.x, x.data(), bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(d.y, y.data(), bytes, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) return CudaError(err, "cudaMemcpy to device");
  constexpr int kThreads = 256;
  SaxpyKernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(n, a, d.x, d.y, d.out);
  if ((err = cudaGetLastError()) != cudaSuccess) return CudaError(err, "saxpy launch");
  err = cudaMemcpy(out.data(), d.out, bytes, cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) return CudaError(err, "cudaMemcpy to host");
  return out;
}

}  // namespace sluice::kernels
