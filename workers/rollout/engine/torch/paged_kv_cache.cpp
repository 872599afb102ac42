#include "workers/rollout/engine/torch/paged_kv_cache.h"

#include <string>
#include <utility>

#include "workers/rollout/engine/kv_block_manager.h"

namespace sluice::engine {

PagedKvCache::PagedKvCache(std::vector<torch::Tensor> keys, std::vector<torch::Tensor> values,
                           int64_t num_blocks, int64_t block_size)
    : keys_(std::move(keys)),
      values_(std::move(values)),
      num_blocks_(num_blocks),
      block_size_(block_size) {}

Result<PagedKvCache> PagedKvCache::Create(const model::ModelConfig& config, int64_t num_blocks,
                                          int64_t block_size, torch::Dtype dtype,
                                          torch::Device device) {
  if (num_blocks <= 0) {
    return Status::InvalidArgument(
        "the KV cache needs at least one block, got " + std::to_string(num_blocks), "num_blocks");
  }
  if (block_size <= 0) {
    return Status::InvalidArgument("block_size must be positive, got " + std::to_string(block_size),
                                   "block_size");
  }
  std::vector<torch::Tensor> keys;
  std::vector<torch::Tensor> values;
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  try {
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
      keys.push_back(torch::zeros(
          {num_blocks, block_size, config.num_key_value_heads, config.head_dim}, options));
      values.push_back(torch::zeros(
          {num_blocks, block_size, config.num_key_value_heads, config.head_dim}, options));
    }
  } catch (const std::exception& e) {
    return Status::Unavailable("allocating the KV cache (" + std::to_string(num_blocks) +
                               " blocks): " + e.what());
  }
  return PagedKvCache(std::move(keys), std::move(values), num_blocks, block_size);
}

int64_t PagedKvCache::BytesPerBlock(const model::ModelConfig& config, int64_t block_size,
                                    torch::Dtype dtype) {
  return 2 * config.num_hidden_layers * block_size * config.num_key_value_heads * config.head_dim *
         static_cast<int64_t>(torch::elementSize(dtype));
}

int64_t PagedKvCache::bytes() const {
  int64_t total = 0;
  for (size_t l = 0; l < keys_.size(); ++l) {
    total += static_cast<int64_t>(keys_[l].nbytes() + values_[l].nbytes());
  }
  return total;
}

torch::Tensor PagedKvCache::Flat(const torch::Tensor& t) {
  return t.view({t.size(0) * t.size(1), t.size(2), t.size(3)});
}

void PagedKvCache::Write(int64_t layer, const torch::Tensor& slots, const torch::Tensor& k,
                         const torch::Tensor& v) {
  const auto l = static_cast<size_t>(layer);
  Flat(keys_[l]).index_copy_(0, slots, k.to(keys_[l].scalar_type()));
  Flat(values_[l]).index_copy_(0, slots, v.to(values_[l].scalar_type()));
}

std::pair<torch::Tensor, torch::Tensor> PagedKvCache::Gather(int64_t layer,
                                                             const torch::Tensor& slots) const {
  const auto l = static_cast<size_t>(layer);
  return {Flat(keys_[l]).index_select(0, slots), Flat(values_[l]).index_select(0, slots)};
}

void PagedKvCache::CopyBlocks(std::span<const BlockCopy> copies) {
  if (copies.empty()) return;
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < keys_.size(); ++l) {
    for (const BlockCopy& c : copies) {
      keys_[l][c.dst].copy_(keys_[l][c.src]);
      values_[l][c.dst].copy_(values_[l][c.src]);
    }
  }
}

std::vector<int64_t> SlotsFor(std::span<const int32_t> table, int64_t block_size, int64_t begin,
                              int64_t end) {
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(std::max<int64_t>(end - begin, 0)));
  for (int64_t p = begin; p < end; ++p) {
    slots.push_back(static_cast<int64_t>(table[static_cast<size_t>(p / block_size)]) * block_size +
                    p % block_size);
  }
  return slots;
}

}  // namespace sluice::engine
