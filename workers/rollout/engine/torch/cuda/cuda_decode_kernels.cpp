#include "workers/rollout/engine/torch/cuda/cuda_decode_kernels.h"

#include <stdexcept>
#include <string>

#include "workers/kernels/kv_cache_write.h"
#include "workers/kernels/paged_attention.h"
#include "workers/kernels/rms_norm.h"
#include "workers/kernels/rotary.h"

namespace sluice::engine::cuda_decode {
namespace {

kernels::DType KernelDType(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return kernels::DType::kFloat32;
    case torch::kFloat16:
      return kernels::DType::kFloat16;
    case torch::kBFloat16:
      return kernels::DType::kBFloat16;
    default:
      throw std::runtime_error(std::string("CUDA decode kernels: unsupported dtype ") +
                               std::string(c10::toString(t.scalar_type())));
  }
}

void Check(const Status& status, const char* kernel) {
  if (!status.ok()) throw std::runtime_error(std::string(kernel) + ": " + status.ToString());
}

void RequireContiguous(const torch::Tensor& t, const char* what) {
  if (!t.is_cuda() || !t.is_contiguous()) {
    throw std::runtime_error(std::string("CUDA decode kernels: ") + what +
                             " must be a contiguous CUDA tensor");
  }
}

torch::Tensor Norm(const torch::Tensor& x, const torch::Tensor* residual,
                   const torch::Tensor& weight, double eps) {
  RequireContiguous(x, "RmsNorm input");
  RequireContiguous(weight, "RmsNorm weight");
  torch::Tensor out = torch::empty_like(x);
  kernels::RmsNormArgs a;
  a.dtype = KernelDType(x);
  a.x = x.data_ptr();
  a.residual = residual != nullptr ? residual->data_ptr() : nullptr;
  a.weight = weight.data_ptr();
  a.out = out.data_ptr();
  a.num_tokens = static_cast<int>(x.numel() / x.size(-1));
  a.hidden = static_cast<int>(x.size(-1));
  a.eps = static_cast<float>(eps);
  Check(kernels::RmsNorm(a, nullptr), "RmsNorm");
  return out;
}

}  // namespace

torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return Norm(x, nullptr, weight, eps);
}

torch::Tensor AddRmsNorm(const torch::Tensor& residual, const torch::Tensor& x,
                         const torch::Tensor& weight, double eps) {
  RequireContiguous(residual, "RmsNorm residual");
  if (residual.sizes() != x.sizes() || residual.scalar_type() != x.scalar_type()) {
    throw std::runtime_error("CUDA decode kernels: residual and input differ in shape or dtype");
  }
  return Norm(x, &residual, weight, eps);
}

void RotaryInPlace(const torch::Tensor& x, const torch::Tensor& positions,
                   const torch::Tensor& inv_freq, double attention_scale) {
  RequireContiguous(x, "rotary input");
  RequireContiguous(positions, "rotary positions");
  RequireContiguous(inv_freq, "rotary inv_freq");
  kernels::RotaryArgs a;
  a.dtype = KernelDType(x);
  a.x = x.data_ptr();
  a.positions = positions.data_ptr<int64_t>();
  a.inv_freq = inv_freq.data_ptr<float>();
  a.num_tokens = static_cast<int>(x.size(0));
  a.num_heads = static_cast<int>(x.size(1));
  a.head_dim = static_cast<int>(x.size(2));
  a.attention_scale = static_cast<float>(attention_scale);
  Check(kernels::ApplyRotary(a, nullptr), "ApplyRotary");
}

void WriteKv(const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& slots,
             const torch::Tensor& k_cache, const torch::Tensor& v_cache) {
  RequireContiguous(k, "new keys");
  RequireContiguous(v, "new values");
  RequireContiguous(slots, "slots");
  RequireContiguous(k_cache, "key cache");
  RequireContiguous(v_cache, "value cache");
  kernels::WriteKvCacheArgs a;
  a.dtype = KernelDType(k);
  a.k = k.data_ptr();
  a.v = v.data_ptr();
  a.slot_mapping = slots.data_ptr<int64_t>();
  a.k_cache = k_cache.data_ptr();
  a.v_cache = v_cache.data_ptr();
  a.num_tokens = static_cast<int>(k.size(0));
  a.num_kv_heads = static_cast<int>(k.size(1));
  a.head_dim = static_cast<int>(k.size(2));
  Check(kernels::WriteKvCache(a, nullptr), "WriteKvCache");
}

torch::Tensor PagedAttention(const torch::Tensor& q, const torch::Tensor& k_cache,
                             const torch::Tensor& v_cache, const torch::Tensor& block_tables,
                             const torch::Tensor& context_lens, double scale) {
  RequireContiguous(q, "decode queries");
  RequireContiguous(k_cache, "key cache");
  RequireContiguous(v_cache, "value cache");
  RequireContiguous(block_tables, "block tables");
  RequireContiguous(context_lens, "context lengths");
  const int batch = static_cast<int>(q.size(0));
  const int heads = static_cast<int>(q.size(1));
  const int head_dim = static_cast<int>(q.size(2));
  const int block_size = static_cast<int>(k_cache.size(1));
  const int max_blocks = static_cast<int>(block_tables.size(1));
  torch::Tensor out = torch::empty_like(q);
  const size_t workspace_bytes =
      kernels::PagedAttentionWorkspaceBytes(batch, heads, head_dim, block_size, max_blocks);
  // The caching allocator hands back the same block step after step.
  torch::Tensor workspace =
      torch::empty({static_cast<int64_t>(workspace_bytes)},
                   torch::TensorOptions().dtype(torch::kUInt8).device(q.device()));
  kernels::PagedAttentionArgs a;
  a.dtype = KernelDType(q);
  a.q = q.data_ptr();
  a.k_cache = k_cache.data_ptr();
  a.v_cache = v_cache.data_ptr();
  a.block_tables = block_tables.data_ptr<int32_t>();
  a.context_lens = context_lens.data_ptr<int32_t>();
  a.out = out.data_ptr();
  a.batch = batch;
  a.num_heads = heads;
  a.num_kv_heads = static_cast<int>(k_cache.size(2));
  a.head_dim = head_dim;
  a.block_size = block_size;
  a.max_blocks_per_seq = max_blocks;
  a.scale = static_cast<float>(scale);
  a.workspace = workspace.data_ptr();
  a.workspace_bytes = workspace_bytes;
  Check(kernels::PagedAttention(a, nullptr), "PagedAttention");
  return out.view({batch, heads * head_dim});
}

}  // namespace sluice::engine::cuda_decode
