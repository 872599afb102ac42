// The engine's CUDA path through workers/kernels, on libtorch tensors: RMSNorm (optionally fused
// with the residual add before it), rotary in place, the KV cache write, and decode attention
// read straight from the paged cache. PagedForward uses them for a model on a CUDA device when
// the engine is built with the kernels (SLUICE_WITH_CUDA: the build defines
// SLUICE_ENGINE_CUDA_KERNELS and compiles this file); otherwise it runs libtorch ops only.
//
// Each call hands the tensors' device pointers to a kernel queued on the legacy default stream,
// the stream libtorch's own ops run on here (the engine never sets a current stream), so the
// kernels order with the surrounding ops without synchronising. Tensors must be on one CUDA
// device, contiguous where noted, in float32, float16 or bfloat16; a kernel's refusal (bad
// shape, unsupported dtype) throws std::runtime_error naming it, which PagedForward turns into
// an Internal status.
//
// Numerics match the libtorch path's (DecoderModel::RmsNorm, ApplyRotary): float32 arithmetic,
// one rounding to the storage type per step; rotary's cos and sin come from the device's own
// float32 functions, so results can differ from the libtorch path by an ulp.
//
// Thread safety: reentrant; the engine's step loop is the only caller.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace sluice::engine::cuda_decode {

// RmsNorm(x) for x [T, H] contiguous and weight [H], in x's dtype.
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// residual += x in place (residual and x [T, H] contiguous), then RmsNorm(residual).
torch::Tensor AddRmsNorm(const torch::Tensor& residual, const torch::Tensor& x,
                         const torch::Tensor& weight, double eps);

// Rotates x [T, heads, head_dim] (contiguous) in place at int64 positions [T] on the device, with
// the model's float32 inverse frequencies [head_dim / 2] and attention scale.
void RotaryInPlace(const torch::Tensor& x, const torch::Tensor& positions,
                   const torch::Tensor& inv_freq, double attention_scale);

// Stores k and v [T, kv_heads, head_dim] (contiguous) at int64 slots [T] of one layer's caches
// [blocks, block_size, kv_heads, head_dim].
void WriteKv(const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& slots,
             const torch::Tensor& k_cache, const torch::Tensor& v_cache);

// Decode attention of q [B, heads, head_dim] (contiguous, one token per sequence) over each
// sequence's first context_lens[b] cached tokens (int32 [B], the query's own included), whose
// blocks are block_tables[b] (int32 [B, max_blocks]); returns [B, heads * head_dim].
torch::Tensor PagedAttention(const torch::Tensor& q, const torch::Tensor& k_cache,
                             const torch::Tensor& v_cache, const torch::Tensor& block_tables,
                             const torch::Tensor& context_lens, double scale);

}  // namespace sluice::engine::cuda_decode
