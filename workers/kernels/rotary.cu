#include <cuda_runtime.h>

#include <cmath>

#include "workers/kernels/cuda_status.cuh"
#include "workers/kernels/dtype_traits.cuh"
#include "workers/kernels/rotary.h"

namespace sluice::kernels {
namespace {

using internal::FromFloat;
using internal::ToFloat;

constexpr int kThreads = 256;

// One block per token; threads stride over its (head, channel pair) combinations. Each pair is
// read and written by one thread, so the rotation is safely in place. sincosf (not the fast
// __sincosf) keeps full accuracy for the large angles of long positions.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    RotaryKernel(T* __restrict__ x, const int64_t* __restrict__ positions,
                 const float* __restrict__ inv_freq, int num_heads, int head_dim,
                 int64_t token_stride, float attention_scale) {
  const int64_t token = blockIdx.x;
  const int half = head_dim / 2;
  const float position = static_cast<float>(positions[token]);
  T* x_token = x + token * token_stride;
  const int pairs = num_heads * half;
  for (int p = threadIdx.x; p < pairs; p += kThreads) {
    const int head = p / half;
    const int i = p % half;
    float s, c;
    sincosf(position * inv_freq[i], &s, &c);
    c *= attention_scale;
    s *= attention_scale;
    T* x_head = x_token + static_cast<int64_t>(head) * head_dim;
    const float x1 = ToFloat(x_head[i]);
    const float x2 = ToFloat(x_head[i + half]);
    x_head[i] = FromFloat<T>(x1 * c - x2 * s);
    x_head[i + half] = FromFloat<T>(x2 * c + x1 * s);
  }
}

}  // namespace

Status ApplyRotary(const RotaryArgs& args, void* stream) {
  if (args.num_tokens < 0) return Status::InvalidArgument("must be >= 0", "num_tokens");
  if (args.num_heads <= 0) return Status::InvalidArgument("must be positive", "num_heads");
  if (args.head_dim <= 0 || args.head_dim % 2 != 0) {
    return Status::InvalidArgument("must be positive and even", "head_dim");
  }
  const int64_t dense = static_cast<int64_t>(args.num_heads) * args.head_dim;
  if (dense > INT32_MAX) return Status::InvalidArgument("num_heads * head_dim overflows", "x");
  const int64_t stride = args.token_stride == 0 ? dense : args.token_stride;
  if (stride < dense) {
    return Status::InvalidArgument("must be 0 or >= num_heads * head_dim", "token_stride");
  }
  if (!std::isfinite(args.attention_scale)) {
    return Status::InvalidArgument("must be finite", "attention_scale");
  }
  if (args.num_tokens == 0) return Status::Ok();
  if (args.x == nullptr) return Status::InvalidArgument("must not be null", "x");
  if (args.positions == nullptr) return Status::InvalidArgument("must not be null", "positions");
  if (args.inv_freq == nullptr) return Status::InvalidArgument("must not be null", "inv_freq");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return internal::DispatchDType(args.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    RotaryKernel<T><<<args.num_tokens, kThreads, 0, s>>>(
        static_cast<T*>(args.x), args.positions, args.inv_freq, args.num_heads, args.head_dim,
        stride, args.attention_scale);
    return internal::LaunchStatus("rotary kernel");
  });
}

}  // namespace sluice::kernels
