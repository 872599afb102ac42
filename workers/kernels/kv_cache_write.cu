#include <cuda_runtime.h>

#include "workers/kernels/cuda_status.cuh"
#include "workers/kernels/kv_cache_write.h"

namespace sluice::kernels {
namespace {

constexpr int kThreads = 256;

// One block per token; threads stride over the token's num_kv_heads * head_dim elements. The
// copy only moves bits, so it is templated on the element's width, not on its number format.
template <typename Word>
__global__ void __launch_bounds__(kThreads)
    WriteKvCacheKernel(const Word* __restrict__ k, const Word* __restrict__ v,
                       const int64_t* __restrict__ slot_mapping, Word* __restrict__ k_cache,
                       Word* __restrict__ v_cache, int64_t row_elements) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const Word* k_row = k + token * row_elements;
  const Word* v_row = v + token * row_elements;
  Word* k_dst = k_cache + slot * row_elements;
  Word* v_dst = v_cache + slot * row_elements;
  for (int64_t i = threadIdx.x; i < row_elements; i += kThreads) {
    k_dst[i] = k_row[i];
    v_dst[i] = v_row[i];
  }
}

}  // namespace

Status WriteKvCache(const WriteKvCacheArgs& args, void* stream) {
  if (args.num_tokens < 0) return Status::InvalidArgument("must be >= 0", "num_tokens");
  if (args.num_kv_heads <= 0) return Status::InvalidArgument("must be positive", "num_kv_heads");
  if (args.head_dim <= 0) return Status::InvalidArgument("must be positive", "head_dim");
  if (args.num_tokens == 0) return Status::Ok();
  if (args.k == nullptr) return Status::InvalidArgument("must not be null", "k");
  if (args.v == nullptr) return Status::InvalidArgument("must not be null", "v");
  if (args.slot_mapping == nullptr) {
    return Status::InvalidArgument("must not be null", "slot_mapping");
  }
  if (args.k_cache == nullptr) return Status::InvalidArgument("must not be null", "k_cache");
  if (args.v_cache == nullptr) return Status::InvalidArgument("must not be null", "v_cache");
  const int64_t row_elements = static_cast<int64_t>(args.num_kv_heads) * args.head_dim;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (DTypeSize(args.dtype) == 4) {
    WriteKvCacheKernel<uint32_t><<<args.num_tokens, kThreads, 0, s>>>(
        static_cast<const uint32_t*>(args.k), static_cast<const uint32_t*>(args.v),
        args.slot_mapping, static_cast<uint32_t*>(args.k_cache),
        static_cast<uint32_t*>(args.v_cache), row_elements);
  } else {
    WriteKvCacheKernel<uint16_t><<<args.num_tokens, kThreads, 0, s>>>(
        static_cast<const uint16_t*>(args.k), static_cast<const uint16_t*>(args.v),
        args.slot_mapping, static_cast<uint16_t*>(args.k_cache),
        static_cast<uint16_t*>(args.v_cache), row_elements);
  }
  return internal::LaunchStatus("write kv cache kernel");
}

}  // namespace sluice::kernels
