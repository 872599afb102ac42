// PagedAttention: single-token (decode) attention over a paged KV cache, with grouped-query
// attention (GQA).
//
// Each sequence's keys and values live in fixed-size cache blocks named by its row of a block
// table, as written by WriteKvCache (kv_cache_write.h). For query head h of sequence b:
//   out[b, h] = softmax(scale * q[b, h] . K^T) V   over the context_lens[b] cached tokens,
// where token t of sequence b lives in physical block block_tables[b, t / block_size] at offset
// t % block_size, and K, V are kv head h / (num_heads / num_kv_heads) of those tokens.
//
// Numerics: scores, the softmax (an online, max-subtracted one) and the weighted sum are all in
// float32 whatever the storage type; the result is rounded once to the storage type.
//
// Algorithm (split-K): the context is cut into partitions of kPagedAttentionPartitionTokens
// tokens; one thread block per (partition, head, sequence) computes a partial softmax
// (running max, sum of exponentials, unnormalised weighted sum of V) into the workspace, and a
// second kernel merges the partials of each (sequence, head). Contexts of any length up to the
// block table's capacity are supported; memory grows with the workspace, not shared memory.
//
// All pointers are device pointers; everything is queued on `stream` (a cudaStream_t, nullptr
// for the legacy default stream) and the call returns without waiting. A returned error means
// nothing was queued, or the launch was refused; faults inside the kernels surface at the next
// synchronisation. Thread safety: reentrant; concurrent calls need distinct workspaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "workers/kernels/dtype.h"

namespace sluice::kernels {

// Tokens of context each thread block of the first kernel handles.
// Measured on an H200 (docs/benchmarks.md): each warp walks its share of a partition one token
// at a time, so the partition length sets the latency of a decode step; 512 cost ~213 us at
// batch 1 whatever the context, 128 with 8 warps a quarter of the serial walk per warp.
inline constexpr int kPagedAttentionPartitionTokens = 128;
// The largest head_dim supported (any head_dim in [1, 256] works).
inline constexpr int kPagedAttentionMaxHeadDim = 256;

struct PagedAttentionArgs {
  DType dtype = DType::kFloat16;  // Of q, k_cache, v_cache and out.

  // [batch, num_heads, head_dim], contiguous: one query token per sequence.
  const void* q = nullptr;
  // Each [num_blocks, block_size, num_kv_heads, head_dim], contiguous (the layout
  // WriteKvCache writes).
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  // [batch, max_blocks_per_seq] int32, contiguous: physical block numbers. Only the first
  // ceil(context_lens[b] / block_size) entries of row b are read.
  const int32_t* block_tables = nullptr;
  // [batch] int32: tokens to attend to per sequence, the query's own token included (its K and V
  // must already be in the cache). Values above max_blocks_per_seq * block_size are clamped to
  // it; a sequence with 0 (or a negative value) gets an all-zero output.
  const int32_t* context_lens = nullptr;
  // [batch, num_heads, head_dim], contiguous; must not overlap the inputs.
  void* out = nullptr;

  int batch = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // Must divide num_heads.
  int head_dim = 0;      // 1 .. kPagedAttentionMaxHeadDim.
  int block_size = 0;    // Tokens per cache block.
  int max_blocks_per_seq = 0;
  float scale = 0.0f;  // Multiplies q . k; usually 1 / sqrt(head_dim).

  // Device scratch of at least PagedAttentionWorkspaceBytes(...) bytes, 16-byte aligned
  // (cudaMalloc's alignment is enough). Owned by the caller; reused freely once the stream has
  // passed this call.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Scratch bytes PagedAttention needs for these shapes: float32 partials, (head_dim + 2) floats
// per (sequence, head, partition) with ceil(max_blocks_per_seq * block_size /
// kPagedAttentionPartitionTokens) partitions. 0 when a shape is not positive.
size_t PagedAttentionWorkspaceBytes(int batch, int num_heads, int head_dim, int block_size,
                                    int max_blocks_per_seq);

// Queues the attention. InvalidArgument (naming the field) for null pointers, non-positive or
// inconsistent shapes, head_dim over 256 or a workspace that is too small.
Status PagedAttention(const PagedAttentionArgs& args, void* stream);

}  // namespace sluice::kernels
