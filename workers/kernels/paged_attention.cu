#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "workers/kernels/cuda_status.cuh"
#include "workers/kernels/dtype_traits.cuh"
#include "workers/kernels/paged_attention.h"

namespace sluice::kernels {
namespace {

using internal::FromFloat;
using internal::ToFloat;

constexpr int kWarpSize = 32;
// Each lane owns channels lane, lane + 32, ... of a head: 8 registers cover head_dim 256.
constexpr int kPerLane = kPagedAttentionMaxHeadDim / kWarpSize;
constexpr int kWarps = 8;  // 16 tokens per warp per partition (docs/benchmarks.md).
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kMergeThreads = 256;  // >= kPagedAttentionMaxHeadDim: one thread per channel.

__device__ __forceinline__ float WarpAllReduceSum(float v) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

// The number of tokens a sequence attends to, clamped to what its block table row can hold so
// that a bad length never reads past the row.
__device__ __forceinline__ int ContextLength(const int32_t* context_lens, int seq, int capacity) {
  const int len = context_lens[seq];
  return len < 0 ? 0 : (len > capacity ? capacity : len);
}

// One block per (partition, head, sequence). Warp w takes tokens start + w, start + w + kWarps,
// ... of the partition, one token at a time: the whole warp computes q . k (each lane its
// channels, then a butterfly sum), and every lane updates its own channels of an online softmax
// (running max m, sum of exponentials l, unnormalised weighted sum acc). The warps' states are
// then merged through shared memory and written, still unnormalised, to the partials.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    PartitionKernel(const T* __restrict__ q, const T* __restrict__ k_cache,
                    const T* __restrict__ v_cache, const int32_t* __restrict__ block_tables,
                    const int32_t* __restrict__ context_lens, int num_heads, int num_kv_heads,
                    int head_dim, int block_size, int max_blocks_per_seq, float scale,
                    int num_partitions, float* __restrict__ part_max, float* __restrict__ part_sum,
                    float* __restrict__ part_acc) {
  const int partition = blockIdx.x;
  const int head = blockIdx.y;
  const int seq = blockIdx.z;
  const int context = ContextLength(context_lens, seq, max_blocks_per_seq * block_size);
  const int start = partition * kPagedAttentionPartitionTokens;
  // Uniform across the block, and before any barrier: partitions past the context write
  // nothing; the merge kernel never reads them.
  if (start >= context) return;
  const int end = min(start + kPagedAttentionPartitionTokens, context);

  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int kv_head = head / (num_heads / num_kv_heads);

  const T* q_head = q + (static_cast<int64_t>(seq) * num_heads + head) * head_dim;
  float q_reg[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int d = lane + j * kWarpSize;
    q_reg[j] = d < head_dim ? ToFloat(q_head[d]) * scale : 0.0f;
  }

  float m = -INFINITY;
  float l = 0.0f;
  float acc[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) acc[j] = 0.0f;

  const int32_t* table = block_tables + static_cast<int64_t>(seq) * max_blocks_per_seq;
  const int64_t token_stride = static_cast<int64_t>(num_kv_heads) * head_dim;
  for (int t = start + warp; t < end; t += kWarps) {
    const int64_t block = table[t / block_size];
    const int64_t base = (block * block_size + t % block_size) * token_stride +
                         static_cast<int64_t>(kv_head) * head_dim;
    float dot = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int d = lane + j * kWarpSize;
      if (d < head_dim) dot += q_reg[j] * ToFloat(k_cache[base + d]);
    }
    const float score = WarpAllReduceSum(dot);  // Identical in every lane.
    const float m_new = fmaxf(m, score);
    const float rescale = expf(m - m_new);  // 0 on the first token (m = -inf).
    const float p = expf(score - m_new);
    l = l * rescale + p;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int d = lane + j * kWarpSize;
      if (d < head_dim) acc[j] = acc[j] * rescale + p * ToFloat(v_cache[base + d]);
    }
    m = m_new;
  }

  __shared__ float s_max[kWarps];
  __shared__ float s_sum[kWarps];
  __shared__ float s_acc[kWarps][kPagedAttentionMaxHeadDim];
  if (lane == 0) {
    s_max[warp] = m;
    s_sum[warp] = l;
  }
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int d = lane + j * kWarpSize;
    if (d < head_dim) s_acc[warp][d] = acc[j];
  }
  __syncthreads();

  // Warp 0 saw token `start`, so the block's max is finite; a warp that saw no token (m = -inf)
  // gets weight 0 explicitly rather than through exp(-inf).
  float block_max = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) block_max = fmaxf(block_max, s_max[w]);
  float weight[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = s_max[w] == -INFINITY ? 0.0f : expf(s_max[w] - block_max);
  }

  const int64_t slot = (static_cast<int64_t>(seq) * num_heads + head) * num_partitions + partition;
  if (threadIdx.x == 0) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += s_sum[w] * weight[w];
    part_max[slot] = block_max;
    part_sum[slot] = sum;
  }
  for (int d = threadIdx.x; d < head_dim; d += kThreads) {
    float a = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) a += s_acc[w][d] * weight[w];
    part_acc[slot * head_dim + d] = a;
  }
}

// One block per (head, sequence), one thread per channel: rescales every used partition to the
// global max and normalises. Each thread recomputes the max and the sum over partitions (a few
// dozen floats, cached), which keeps the kernel free of barriers.
template <typename T>
__global__ void __launch_bounds__(kMergeThreads)
    MergeKernel(const int32_t* __restrict__ context_lens, int num_heads, int head_dim,
                int block_size, int max_blocks_per_seq, int num_partitions,
                const float* __restrict__ part_max, const float* __restrict__ part_sum,
                const float* __restrict__ part_acc, T* __restrict__ out) {
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int context = ContextLength(context_lens, seq, max_blocks_per_seq * block_size);
  const int used = (context + kPagedAttentionPartitionTokens - 1) / kPagedAttentionPartitionTokens;
  T* out_head = out + (static_cast<int64_t>(seq) * num_heads + head) * head_dim;
  const int64_t first = (static_cast<int64_t>(seq) * num_heads + head) * num_partitions;

  float global_max = -INFINITY;
  for (int p = 0; p < used; ++p) global_max = fmaxf(global_max, part_max[first + p]);
  float total = 0.0f;
  for (int p = 0; p < used; ++p)
    total += part_sum[first + p] * expf(part_max[first + p] - global_max);

  for (int d = threadIdx.x; d < head_dim; d += kMergeThreads) {
    float a = 0.0f;
    for (int p = 0; p < used; ++p) {
      a += part_acc[(first + p) * head_dim + d] * expf(part_max[first + p] - global_max);
    }
    // total >= 1 whenever a token was seen (the max token contributes exp(0)).
    out_head[d] = FromFloat<T>(used > 0 ? a / total : 0.0f);
  }
}

int NumPartitions(int block_size, int max_blocks_per_seq) {
  const int64_t capacity = static_cast<int64_t>(block_size) * max_blocks_per_seq;
  return static_cast<int>((capacity + kPagedAttentionPartitionTokens - 1) /
                          kPagedAttentionPartitionTokens);
}

Status Validate(const PagedAttentionArgs& a) {
  if (a.q == nullptr) return Status::InvalidArgument("must not be null", "q");
  if (a.k_cache == nullptr) return Status::InvalidArgument("must not be null", "k_cache");
  if (a.v_cache == nullptr) return Status::InvalidArgument("must not be null", "v_cache");
  if (a.block_tables == nullptr) {
    return Status::InvalidArgument("must not be null", "block_tables");
  }
  if (a.context_lens == nullptr) {
    return Status::InvalidArgument("must not be null", "context_lens");
  }
  if (a.out == nullptr) return Status::InvalidArgument("must not be null", "out");
  // Grid dimensions y and z are limited to 65535.
  if (a.batch <= 0 || a.batch > 65535) {
    return Status::InvalidArgument("must be in [1, 65535]", "batch");
  }
  if (a.num_heads <= 0 || a.num_heads > 65535) {
    return Status::InvalidArgument("must be in [1, 65535]", "num_heads");
  }
  if (a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0) {
    return Status::InvalidArgument("must be positive and divide num_heads", "num_kv_heads");
  }
  if (a.head_dim <= 0 || a.head_dim > kPagedAttentionMaxHeadDim) {
    return Status::InvalidArgument("must be in [1, 256]", "head_dim");
  }
  if (a.block_size <= 0) return Status::InvalidArgument("must be positive", "block_size");
  if (a.max_blocks_per_seq <= 0) {
    return Status::InvalidArgument("must be positive", "max_blocks_per_seq");
  }
  if (static_cast<int64_t>(a.block_size) * a.max_blocks_per_seq > INT32_MAX) {
    return Status::InvalidArgument("block_size * max_blocks_per_seq must fit in int32",
                                   "max_blocks_per_seq");
  }
  if (!std::isfinite(a.scale)) return Status::InvalidArgument("must be finite", "scale");
  const size_t need = PagedAttentionWorkspaceBytes(a.batch, a.num_heads, a.head_dim, a.block_size,
                                                   a.max_blocks_per_seq);
  if (a.workspace == nullptr || a.workspace_bytes < need) {
    return Status::InvalidArgument(
        "needs " + std::to_string(need) + " bytes, got " +
            std::to_string(a.workspace == nullptr ? 0 : a.workspace_bytes),
        "workspace");
  }
  return Status::Ok();
}

}  // namespace

size_t PagedAttentionWorkspaceBytes(int batch, int num_heads, int head_dim, int block_size,
                                    int max_blocks_per_seq) {
  if (batch <= 0 || num_heads <= 0 || head_dim <= 0 || block_size <= 0 || max_blocks_per_seq <= 0) {
    return 0;
  }
  const size_t partials = static_cast<size_t>(batch) * static_cast<size_t>(num_heads) *
                          static_cast<size_t>(NumPartitions(block_size, max_blocks_per_seq));
  return partials * (static_cast<size_t>(head_dim) + 2) * sizeof(float);
}

Status PagedAttention(const PagedAttentionArgs& args, void* stream) {
  SLUICE_RETURN_IF_ERROR(Validate(args));
  const int num_partitions = NumPartitions(args.block_size, args.max_blocks_per_seq);
  const size_t partials = static_cast<size_t>(args.batch) * args.num_heads * num_partitions;
  float* part_max = static_cast<float*>(args.workspace);
  float* part_sum = part_max + partials;
  float* part_acc = part_sum + partials;
  cudaStream_t s = static_cast<cudaStream_t>(stream);

  return internal::DispatchDType(args.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const dim3 grid(num_partitions, args.num_heads, args.batch);
    PartitionKernel<T><<<grid, kThreads, 0, s>>>(
        static_cast<const T*>(args.q), static_cast<const T*>(args.k_cache),
        static_cast<const T*>(args.v_cache), args.block_tables, args.context_lens, args.num_heads,
        args.num_kv_heads, args.head_dim, args.block_size, args.max_blocks_per_seq, args.scale,
        num_partitions, part_max, part_sum, part_acc);
    SLUICE_RETURN_IF_ERROR(internal::LaunchStatus("paged attention partition kernel"));
    const dim3 merge_grid(args.num_heads, args.batch);
    MergeKernel<T><<<merge_grid, kMergeThreads, 0, s>>>(
        args.context_lens, args.num_heads, args.head_dim, args.block_size, args.max_blocks_per_seq,
        num_partitions, part_max, part_sum, part_acc, static_cast<T*>(args.out));
    return internal::LaunchStatus("paged attention merge kernel");
  });
}

}  // namespace sluice::kernels
