// ApplyRotary: rotary position embedding (RoPE), in place, in the rotate-half (GPT-NeoX / Hugging
// Face Llama) layout.
//
// For token t, each head, and channel i < head_dim / 2, with x1 = x[t, h, i] and
// x2 = x[t, h, i + head_dim / 2]:
//   angle = float(positions[t]) * inv_freq[i]                       (float32 multiply)
//   c = cos(angle) * attention_scale,  s = sin(angle) * attention_scale   (float32)
//   x1' = T(x1 * c - x2 * s),  x2' = T(x2 * c + x1 * s)
// computed in float32 and rounded once to the storage type T. (Hugging Face rounds cos and sin,
// and each product, to T; the results differ by about one unit in the last place of T.)
// inv_freq carries the model's rope scaling (base, NTK, YaRN, ...) already applied;
// attention_scale is YaRN's magnitude factor, 1 otherwise.
//
// All pointers are device pointers. Queued on `stream` (a cudaStream_t, nullptr for the legacy
// default stream); returns without waiting. Thread safety: reentrant.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "workers/kernels/dtype.h"

namespace sluice::kernels {

struct RotaryArgs {
  DType dtype = DType::kFloat16;  // Of x.
  // [num_tokens, num_heads, head_dim], heads contiguous within a token; consecutive tokens are
  // token_stride elements apart (so q or k may be a slice of a fused qkv projection).
  void* x = nullptr;
  const int64_t* positions = nullptr;  // [num_tokens]: each token's position in its sequence.
  const float* inv_freq = nullptr;     // [head_dim / 2] float32.
  int num_tokens = 0;                  // 0 queues nothing.
  int num_heads = 0;
  int head_dim = 0;          // Even.
  int64_t token_stride = 0;  // Elements; 0 means num_heads * head_dim (dense).
  float attention_scale = 1.0f;
};

// Queues the rotation. InvalidArgument (naming the field) for null pointers, bad shapes (odd
// head_dim, token_stride below num_heads * head_dim) or a non-finite attention_scale.
Status ApplyRotary(const RotaryArgs& args, void* stream);

}  // namespace sluice::kernels
