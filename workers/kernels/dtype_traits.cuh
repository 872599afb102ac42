// Internal to workers/kernels/*.cu: float32 <-> storage-type conversion and DType dispatch.
//
// Kernels are templates over the storage type T (float, __half or __nv_bfloat16); they load T,
// compute in float and store T with round-to-nearest-even.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <utility>

#include "common/status.h"
#include "workers/kernels/dtype.h"

namespace sluice::kernels::internal {

template <typename T>
__device__ __forceinline__ float ToFloat(T v);
template <>
__device__ __forceinline__ float ToFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float ToFloat<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float ToFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Carries a type through a generic lambda without constructing a value of it.
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the CUDA storage type of `dtype` and returns its Status:
//   return DispatchDType(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename Fn>
Status DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return std::forward<Fn>(fn)(TypeTag<float>{});
    case DType::kFloat16:
      return std::forward<Fn>(fn)(TypeTag<__half>{});
    case DType::kBFloat16:
      return std::forward<Fn>(fn)(TypeTag<__nv_bfloat16>{});
  }
  return Status::InvalidArgument("unknown dtype", "dtype");
}

}  // namespace sluice::kernels::internal
