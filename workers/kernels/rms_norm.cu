#include <cuda_runtime.h>

#include <cmath>
#include <cub/block/block_reduce.cuh>

#include "workers/kernels/cuda_status.cuh"
#include "workers/kernels/dtype_traits.cuh"
#include "workers/kernels/rms_norm.h"

namespace sluice::kernels {
namespace {

using internal::FromFloat;
using internal::ToFloat;

constexpr int kThreads = 256;

// One block per token. Pass 1 forms the (residual-added, storage-rounded) input and its sum of
// squares; pass 2 normalises. Element i is handled by the same thread in both passes, so pass 2
// sees pass 1's writes to `residual` without a fence and `out` may alias `x`. No __restrict__ on
// x and out for that reason.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    RmsNormKernel(const T* x, T* residual, const T* __restrict__ weight, T* out, int hidden,
                  float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * hidden;
  const T* x_row = x + row;
  T* residual_row = residual == nullptr ? nullptr : residual + row;
  T* out_row = out + row;

  float sum_squares = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    float v = ToFloat(x_row[i]);
    if (residual_row != nullptr) {
      const T sum = FromFloat<T>(ToFloat(residual_row[i]) + v);
      residual_row[i] = sum;
      v = ToFloat(sum);
    }
    sum_squares += v * v;
  }

  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage reduce_storage;
  __shared__ float s_inv_rms;
  const float total = BlockReduce(reduce_storage).Sum(sum_squares);  // Valid in thread 0 only.
  if (threadIdx.x == 0) s_inv_rms = rsqrtf(total / static_cast<float>(hidden) + eps);
  __syncthreads();
  const float inv_rms = s_inv_rms;

  const T* src = residual_row != nullptr ? residual_row : x_row;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const T normed = FromFloat<T>(ToFloat(src[i]) * inv_rms);
    out_row[i] = FromFloat<T>(ToFloat(normed) * ToFloat(weight[i]));
  }
}

}  // namespace

Status RmsNorm(const RmsNormArgs& args, void* stream) {
  if (args.num_tokens < 0) return Status::InvalidArgument("must be >= 0", "num_tokens");
  if (args.hidden <= 0) return Status::InvalidArgument("must be positive", "hidden");
  if (!(args.eps >= 0.0f) || !std::isfinite(args.eps)) {
    return Status::InvalidArgument("must be finite and >= 0", "eps");
  }
  if (args.num_tokens == 0) return Status::Ok();
  if (args.x == nullptr) return Status::InvalidArgument("must not be null", "x");
  if (args.weight == nullptr) return Status::InvalidArgument("must not be null", "weight");
  if (args.out == nullptr) return Status::InvalidArgument("must not be null", "out");
  if (args.residual != nullptr && args.residual == args.out) {
    return Status::InvalidArgument("must not be the same buffer as out", "residual");
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return internal::DispatchDType(args.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    RmsNormKernel<T><<<args.num_tokens, kThreads, 0, s>>>(
        static_cast<const T*>(args.x), static_cast<T*>(args.residual),
        static_cast<const T*>(args.weight), static_cast<T*>(args.out), args.hidden, args.eps);
    return internal::LaunchStatus("rms norm kernel");
  });
}

}  // namespace sluice::kernels
