#include <cuda_runtime.h>

#include <climits>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <string>

#include "workers/kernels/cuda_status.cuh"
#include "workers/kernels/philox.h"
#include "workers/kernels/sampling.h"

namespace sluice::kernels {
namespace {

constexpr int kEncodeThreads = 256;
constexpr int kSelectThreads = 1024;
constexpr size_t kAlign = 256;

// Sort keys: ascending 64-bit keys order tokens by decreasing logit, then increasing id. The
// high word is the bitwise NOT of the logit's order-preserving unsigned image; the low word is
// the token id. Every key is distinct, so the order needs no stable sort, and the logit and id
// are recovered exactly from the key.
__device__ __forceinline__ uint64_t EncodeKey(float logit, uint32_t id) {
  uint32_t bits = __float_as_uint(logit);
  if (bits == 0x80000000u) bits = 0;  // -0 sorts as +0, so the tie falls to the lower id.
  // Negative floats: flip all bits; non-negative: set the sign bit. Monotone in the value.
  const uint32_t ordered = (bits & 0x80000000u) != 0 ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(~ordered) << 32) | id;
}

// Reduction operators (cub's own Min and Max are gone from CCCL 3).
struct MinOp {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};
struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

struct Decoded {
  float logit;
  int id;
};

__device__ __forceinline__ Decoded DecodeKey(uint64_t key) {
  const uint32_t ordered = ~static_cast<uint32_t>(key >> 32);
  const uint32_t bits = (ordered & 0x80000000u) != 0 ? (ordered & 0x7fffffffu) : ~ordered;
  return {__uint_as_float(bits), static_cast<int>(key & 0xffffffffu)};
}

// keys[i] for every element of the batch, and the batch + 1 segment offsets row * vocab.
__global__ void __launch_bounds__(kEncodeThreads)
    EncodeKernel(const float* __restrict__ logits, int64_t total, int vocab, int batch,
                 uint64_t* __restrict__ keys, int* __restrict__ segment_offsets) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kEncodeThreads + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kEncodeThreads;
  for (int64_t i = first; i < total; i += stride) {
    keys[i] = EncodeKey(logits[i], static_cast<uint32_t>(i % vocab));
  }
  for (int64_t row = first; row <= batch; row += stride) {
    segment_offsets[row] = static_cast<int>(row * vocab);
  }
}

// One block per row, over the row's sorted keys. Thread i owns the contiguous chunk
// [i * chunk, (i + 1) * chunk) of the top-k positions; a position's cumulative weight is always
// computed the same way (the block's exclusive scan of chunk sums, then a sequential sum within
// the chunk), so the top-p cut, the kept mass and the inverse-CDF search agree exactly.
__global__ void __launch_bounds__(kSelectThreads)
    SelectKernel(const uint64_t* __restrict__ sorted, int vocab,
                 const float* __restrict__ temperatures, const int32_t* __restrict__ top_ks,
                 const float* __restrict__ top_ps, const uint64_t* __restrict__ seeds,
                 const uint64_t* __restrict__ offsets, int32_t* __restrict__ tokens,
                 float* __restrict__ logprobs) {
  using BlockScan = cub::BlockScan<float, kSelectThreads>;
  using BlockReduce = cub::BlockReduce<int, kSelectThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ typename BlockReduce::TempStorage reduce_storage;
  __shared__ int s_kept;
  __shared__ float s_kept_mass;
  __shared__ int s_pick;
  __shared__ int s_last_positive;

  const int row = blockIdx.x;
  const uint64_t* keys = sorted + static_cast<int64_t>(row) * vocab;
  const float max_logit = DecodeKey(keys[0]).logit;
  const float temperature = temperatures[row];
  const bool greedy = !(temperature > 0.0f);
  const float t = greedy ? 1.0f : temperature;
  int top_k = vocab;
  if (!greedy && top_ks[row] > 0 && top_ks[row] < vocab) top_k = top_ks[row];
  const float top_p = greedy ? 1.0f : top_ps[row];

  const int chunk = (top_k + kSelectThreads - 1) / kSelectThreads;
  const int begin = min(static_cast<int>(threadIdx.x) * chunk, top_k);
  const int end = min(begin + chunk, top_k);
  auto weight = [&](int j) { return expf((DecodeKey(keys[j]).logit - max_logit) / t); };

  float chunk_sum = 0.0f;
  for (int j = begin; j < end; ++j) chunk_sum += weight(j);
  float before = 0.0f;
  float top_k_mass = 0.0f;
  BlockScan(scan_storage).ExclusiveSum(chunk_sum, before, top_k_mass);  // Mass to all threads.

  if (greedy) {
    // top_k == vocab and t == 1 here, so top_k_mass = sum_i exp(x_i - max).
    if (threadIdx.x == 0) {
      tokens[row] = DecodeKey(keys[0]).id;
      logprobs[row] = -logf(top_k_mass);
    }
    return;  // The whole block: `greedy` is uniform.
  }

  // Top-p: the shortest prefix with cumulative weight >= top_p * top_k_mass.
  int kept = top_k;
  float kept_mass = top_k_mass;
  if (top_p < 1.0f) {  // Uniform; false for NaN.
    const float threshold = top_p * top_k_mass;
    int found = INT_MAX;
    float found_mass = 0.0f;
    float running = before;
    for (int j = begin; j < end; ++j) {
      running += weight(j);
      if (running >= threshold) {
        found = j + 1;
        found_mass = running;
        break;
      }
    }
    const int first_found = BlockReduce(reduce_storage).Reduce(found, MinOp());
    if (threadIdx.x == 0) s_kept = first_found;
    __syncthreads();
    if (s_kept != INT_MAX) {  // Uniform. Else rounding kept the sum below: keep all top_k.
      if (found == s_kept) s_kept_mass = found_mass;  // Exactly one thread: chunks are disjoint.
      __syncthreads();
      kept = s_kept;
      kept_mass = s_kept_mass;
    }
    __syncthreads();  // reduce_storage is reused below.
  }

  // Inverse CDF over the kept prefix.
  const float u = PhiloxUniform(seeds[row], offsets[row]);
  const float target = u * kept_mass;
  int pick = INT_MAX;
  int last_positive = -1;
  float running = before;
  const int scan_end = min(end, kept);
  for (int j = begin; j < scan_end; ++j) {
    const float w = weight(j);
    running += w;
    if (w > 0.0f) {
      last_positive = j;
      if (running > target) {
        pick = j;
        break;
      }
    }
  }
  const int first_pick = BlockReduce(reduce_storage).Reduce(pick, MinOp());
  if (threadIdx.x == 0) s_pick = first_pick;
  __syncthreads();
  const int last = BlockReduce(reduce_storage).Reduce(last_positive, MaxOp());
  if (threadIdx.x == 0) s_last_positive = last;
  __syncthreads();

  if (threadIdx.x == 0) {
    // No pick only when u * kept_mass rounded up to kept_mass: take the last positive-weight
    // token (position 0 has weight exp(0) = 1, so there is one).
    const int position = s_pick != INT_MAX ? s_pick : s_last_positive;
    const Decoded d = DecodeKey(keys[position]);
    tokens[row] = d.id;
    logprobs[row] = (d.logit - max_logit) / t - logf(kept_mass);
  }
}

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Byte offsets of the workspace's parts.
struct Layout {
  size_t keys_a = 0;  // The encoded keys; then either buffer may hold the sorted ones.
  size_t keys_b = 0;
  size_t segment_offsets = 0;
  size_t sort_storage = 0;
  size_t sort_storage_bytes = 0;
  size_t total = 0;
};

Status ValidateShape(int batch, int vocab) {
  if (batch < 0) return Status::InvalidArgument("must be >= 0", "batch");
  if (vocab <= 0) return Status::InvalidArgument("must be positive", "vocab");
  if (static_cast<int64_t>(batch) * vocab > INT_MAX) {
    return Status::InvalidArgument("batch * vocab must fit in int32", "vocab");
  }
  return Status::Ok();
}

Result<Layout> ComputeLayout(int batch, int vocab) {
  SLUICE_RETURN_IF_ERROR(ValidateShape(batch, vocab));
  const size_t items = static_cast<size_t>(batch) * static_cast<size_t>(vocab);
  Layout l;
  // A size query only: cub reads no pointer when d_temp_storage is null. The double-buffer
  // form ping-pongs between our two key buffers instead of asking for a third in its storage.
  cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
  SLUICE_RETURN_IF_ERROR(internal::CudaStatus(
      cub::DeviceSegmentedRadixSort::SortKeys(
          nullptr, l.sort_storage_bytes, keys, static_cast<int>(items), batch,
          static_cast<const int*>(nullptr), static_cast<const int*>(nullptr), 0, 64),
      "cub::DeviceSegmentedRadixSort::SortKeys (size query)"));
  l.keys_a = 0;
  l.keys_b = AlignUp(l.keys_a + items * sizeof(uint64_t));
  l.segment_offsets = AlignUp(l.keys_b + items * sizeof(uint64_t));
  l.sort_storage = AlignUp(l.segment_offsets + (static_cast<size_t>(batch) + 1) * sizeof(int));
  l.total = l.sort_storage + l.sort_storage_bytes;
  return l;
}

}  // namespace

Result<size_t> SampleWorkspaceBytes(int batch, int vocab) {
  SLUICE_ASSIGN_OR_RETURN(Layout layout, ComputeLayout(batch, vocab));
  return layout.total;
}

Status Sample(const SampleArgs& args, void* stream) {
  SLUICE_RETURN_IF_ERROR(ValidateShape(args.batch, args.vocab));
  if (args.batch == 0) return Status::Ok();
  if (args.logits == nullptr) return Status::InvalidArgument("must not be null", "logits");
  if (args.temperatures == nullptr) {
    return Status::InvalidArgument("must not be null", "temperatures");
  }
  if (args.top_k == nullptr) return Status::InvalidArgument("must not be null", "top_k");
  if (args.top_p == nullptr) return Status::InvalidArgument("must not be null", "top_p");
  if (args.seeds == nullptr) return Status::InvalidArgument("must not be null", "seeds");
  if (args.offsets == nullptr) return Status::InvalidArgument("must not be null", "offsets");
  if (args.tokens == nullptr) return Status::InvalidArgument("must not be null", "tokens");
  if (args.logprobs == nullptr) return Status::InvalidArgument("must not be null", "logprobs");
  SLUICE_ASSIGN_OR_RETURN(Layout layout, ComputeLayout(args.batch, args.vocab));
  if (args.workspace == nullptr || args.workspace_bytes < layout.total) {
    return Status::InvalidArgument(
        "needs " + std::to_string(layout.total) + " bytes, got " +
            std::to_string(args.workspace == nullptr ? 0 : args.workspace_bytes),
        "workspace");
  }

  char* base = static_cast<char*>(args.workspace);
  auto* keys_a = reinterpret_cast<uint64_t*>(base + layout.keys_a);
  auto* keys_b = reinterpret_cast<uint64_t*>(base + layout.keys_b);
  auto* segment_offsets = reinterpret_cast<int*>(base + layout.segment_offsets);
  void* sort_storage = base + layout.sort_storage;
  size_t sort_storage_bytes = layout.sort_storage_bytes;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t items = static_cast<int64_t>(args.batch) * args.vocab;

  const int64_t wanted_blocks = (items + kEncodeThreads - 1) / kEncodeThreads;
  const int encode_blocks = static_cast<int>(wanted_blocks < 4096 ? wanted_blocks : 4096);
  EncodeKernel<<<encode_blocks, kEncodeThreads, 0, s>>>(args.logits, items, args.vocab, args.batch,
                                                        keys_a, segment_offsets);
  SLUICE_RETURN_IF_ERROR(internal::LaunchStatus("sampling encode kernel"));

  // cub decides on the host how many passes run, so keys.Current() names the sorted buffer as
  // soon as the call returns.
  cub::DoubleBuffer<uint64_t> keys(keys_a, keys_b);
  SLUICE_RETURN_IF_ERROR(internal::CudaStatus(
      cub::DeviceSegmentedRadixSort::SortKeys(sort_storage, sort_storage_bytes, keys,
                                              static_cast<int>(items), args.batch, segment_offsets,
                                              segment_offsets + 1, 0, 64, s),
      "cub::DeviceSegmentedRadixSort::SortKeys"));

  SelectKernel<<<args.batch, kSelectThreads, 0, s>>>(keys.Current(), args.vocab, args.temperatures,
                                                     args.top_k, args.top_p, args.seeds,
                                                     args.offsets, args.tokens, args.logprobs);
  return internal::LaunchStatus("sampling select kernel");
}

}  // namespace sluice::kernels
