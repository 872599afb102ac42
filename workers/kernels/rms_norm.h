// RmsNorm: root-mean-square layer normalisation, optionally fused with the residual add before
// it, with the rounding of Hugging Face transformers' LlamaRMSNorm.
//
// Plain (residual == nullptr), for each token t of x [num_tokens, hidden]:
//   r      = rsqrt(mean_i(float(x[t, i])^2) + eps)              in float32
//   out[t, i] = T(float(T(float(x[t, i]) * r)) * float(weight[i]))
// i.e. the normalised value is rounded to the storage type T first and then multiplied by the
// weight in T (one rounding per product, which is what `weight * hidden.to(input_dtype)` does
// in PyTorch). For float32 storage both roundings are exact no-ops.
//
// Fused (residual != nullptr), the pre-norm residual stream of a decoder layer:
//   residual[t, i] = T(float(residual[t, i]) + float(x[t, i]))   (updated in place)
//   out[t]         = RmsNorm(residual[t])                          (as above)
// matching `hidden = residual + hidden; residual = hidden; hidden = norm(hidden)` in T.
//
// All pointers are device pointers. `out` may be `x` (in place); it must not overlap `residual`
// or `weight`. Queued on `stream` (a cudaStream_t, nullptr for the legacy default stream);
// returns without waiting. Thread safety: reentrant.
#pragma once

#include "common/status.h"
#include "workers/kernels/dtype.h"

namespace sluice::kernels {

struct RmsNormArgs {
  DType dtype = DType::kFloat16;  // Of x, residual, weight and out.
  const void* x = nullptr;        // [num_tokens, hidden], contiguous.
  void* residual = nullptr;       // nullptr, or [num_tokens, hidden] contiguous, read and written.
  const void* weight = nullptr;   // [hidden].
  void* out = nullptr;            // [num_tokens, hidden], contiguous.
  int num_tokens = 0;             // 0 queues nothing.
  int hidden = 0;
  float eps = 1e-6f;  // Added to the mean square; must be >= 0.
};

// Queues the normalisation. InvalidArgument (naming the field) for null pointers, bad shapes or
// a negative eps.
Status RmsNorm(const RmsNormArgs& args, void* stream);

}  // namespace sluice::kernels
