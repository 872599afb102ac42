// Test helpers for the CUDA kernels: device buffers, storage-type conversion on the host,
// tolerances, and the skip for machines without a GPU.
//
// CUDA failures inside a helper throw std::runtime_error, which GoogleTest reports as a failure
// of the test that called it (helpers cannot use ASSERT_* in functions returning values).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workers/kernels/device.h"
#include "workers/kernels/dtype.h"

// Skips the current test when no CUDA device is visible.
#define SLUICE_SKIP_WITHOUT_GPU()                       \
  do {                                                  \
    if (::sluice::kernels::VisibleDeviceCount() == 0) { \
      GTEST_SKIP() << "no CUDA device is visible";      \
    }                                                   \
  } while (0)

namespace sluice::kernels::testing {

inline void ThrowIfCudaError(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
  }
}

// Waits for the default stream and reports any fault of the kernels queued so far.
inline void Synchronize() {
  ThrowIfCudaError(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  ThrowIfCudaError(cudaGetLastError(), "cudaGetLastError");
}

// Owns cudaMalloc'd memory; move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) ThrowIfCudaError(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T>
DeviceBuffer Upload(const std::vector<T>& host) {
  DeviceBuffer buffer(host.size() * sizeof(T));
  if (!host.empty()) {
    ThrowIfCudaError(cudaMemcpy(buffer.get(), host.data(), buffer.bytes(), cudaMemcpyHostToDevice),
                     "cudaMemcpy to device");
  }
  return buffer;
}

// Copies `count` elements back (synchronises with the device).
template <typename T>
std::vector<T> Download(const DeviceBuffer& buffer, size_t count) {
  if (count * sizeof(T) > buffer.bytes()) throw std::runtime_error("Download past the buffer");
  std::vector<T> host(count);
  if (count > 0) {
    ThrowIfCudaError(
        cudaMemcpy(host.data(), buffer.get(), count * sizeof(T), cudaMemcpyDeviceToHost),
        "cudaMemcpy to host");
  }
  return host;
}

// The float nearest to v that the storage type represents (round to nearest even).
inline float RoundTo(DType dtype, float v) {
  switch (dtype) {
    case DType::kFloat32:
      return v;
    case DType::kFloat16:
      return __half2float(__float2half_rn(v));
    case DType::kBFloat16:
      return __bfloat162float(__float2bfloat16_rn(v));
  }
  return v;
}

inline std::vector<float> RoundAll(DType dtype, std::vector<float> values) {
  for (float& v : values) v = RoundTo(dtype, v);
  return values;
}

// Host values -> device bytes in the storage type.
inline DeviceBuffer UploadAs(DType dtype, const std::vector<float>& values) {
  if (dtype == DType::kFloat32) return Upload(values);
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    // The *_raw structs expose the bits without memcpy on a class with private members.
    if (dtype == DType::kFloat16) {
      bits[i] = static_cast<__half_raw>(__float2half_rn(values[i])).x;
    } else {
      bits[i] = static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(values[i])).x;
    }
  }
  return Upload(bits);
}

// Device bytes in the storage type -> host floats (exact).
inline std::vector<float> DownloadAs(DType dtype, const DeviceBuffer& buffer, size_t count) {
  if (dtype == DType::kFloat32) return Download<float>(buffer, count);
  const std::vector<uint16_t> bits = Download<uint16_t>(buffer, count);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == DType::kFloat16) {
      __half_raw raw;
      raw.x = bits[i];
      values[i] = __half2float(__half(raw));
    } else {
      __nv_bfloat16_raw raw;
      raw.x = bits[i];
      values[i] = __bfloat162float(__nv_bfloat16(raw));
    }
  }
  return values;
}

// Relative spacing of the storage type near 1 (one unit in the last place).
inline double Ulp(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 1.0 / (1 << 23);
    case DType::kFloat16:
      return 1.0 / (1 << 10);
    case DType::kBFloat16:
      return 1.0 / (1 << 7);
  }
  return 0;
}

inline const DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

}  // namespace sluice::kernels::testing
