// WriteKvCache: scatters the keys and values of new tokens into the paged KV cache that
// PagedAttention (paged_attention.h) reads.
//
// For each new token t with slot = slot_mapping[t] >= 0:
//   k_cache[slot / block_size, slot % block_size] = k[t]   (all kv heads, all channels)
//   v_cache[...]                                  = v[t]
// i.e. slot = physical_block * block_size + offset_in_block, and since the caches are
// contiguous [num_blocks, block_size, num_kv_heads, head_dim], the token's row starts at element
// slot * num_kv_heads * head_dim. A negative slot skips the token (padding), as in vLLM.
// Values are copied bit for bit: new tokens and caches share one storage type.
//
// All pointers are device pointers; the copy is queued on `stream` (a cudaStream_t, nullptr for
// the legacy default stream) and the call returns without waiting. Slots must be distinct and
// below num_blocks * block_size (not checked on the device). Thread safety: reentrant.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "workers/kernels/dtype.h"

namespace sluice::kernels {

struct WriteKvCacheArgs {
  DType dtype = DType::kFloat16;          // Of k, v and the caches.
  const void* k = nullptr;                // [num_tokens, num_kv_heads, head_dim], contiguous.
  const void* v = nullptr;                // [num_tokens, num_kv_heads, head_dim], contiguous.
  const int64_t* slot_mapping = nullptr;  // [num_tokens].
  void* k_cache = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim], contiguous.
  void* v_cache = nullptr;  // Same shape as k_cache.
  int num_tokens = 0;       // 0 queues nothing.
  int num_kv_heads = 0;
  int head_dim = 0;
};

// Queues the scatter. InvalidArgument (naming the field) for null pointers or bad shapes.
Status WriteKvCache(const WriteKvCacheArgs& args, void* stream);

}  // namespace sluice::kernels
