// The paged KV cache of one model: per layer a key and a value tensor of shape
// [num_blocks, block_size, num_key_value_heads, head_dim] in the model's dtype and device. The
// block tables that say which blocks a sequence owns live in the torch-free KvBlockManager; a
// token at position p of a sequence is stored in slot block_table[p / block_size] * block_size +
// p % block_size of every layer.
//
// Sizing: CacheBlocksFor turns a token budget or a memory budget (bytes) into a block count;
// BytesPerBlock is 2 (k and v) * layers * block_size * kv_heads * head_dim * element size.
//
// Thread safety: none; the engine's step loop is the only user.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "workers/model/model_config.h"

namespace sluice::engine {

struct BlockCopy;  // kv_block_manager.h

class PagedKvCache {
 public:
  // Zero-filled cache of `num_blocks` blocks of `block_size` tokens.
  static Result<PagedKvCache> Create(const model::ModelConfig& config, int64_t num_blocks,
                                     int64_t block_size, torch::Dtype dtype, torch::Device device);

  // Bytes one block takes over all layers (keys and values).
  static int64_t BytesPerBlock(const model::ModelConfig& config, int64_t block_size,
                               torch::Dtype dtype);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t bytes() const;

  // [num_blocks, block_size, kv_heads, head_dim] of layer `layer`.
  const torch::Tensor& keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)]; }
  const torch::Tensor& values(int64_t layer) const { return values_[static_cast<size_t>(layer)]; }

  // Stores k and v [T, kv_heads, head_dim] of layer `layer` at int64 slots [T].
  void Write(int64_t layer, const torch::Tensor& slots, const torch::Tensor& k,
             const torch::Tensor& v);
  // Keys and values [S, kv_heads, head_dim] of layer `layer` at int64 slots [S] (a copy).
  std::pair<torch::Tensor, torch::Tensor> Gather(int64_t layer, const torch::Tensor& slots) const;

  // Copies whole blocks src -> dst in every layer (copy-on-write of a shared block).
  void CopyBlocks(std::span<const BlockCopy> copies);

 private:
  PagedKvCache(std::vector<torch::Tensor> keys, std::vector<torch::Tensor> values,
               int64_t num_blocks, int64_t block_size);
  // A [num_blocks * block_size, kv_heads, head_dim] view of a layer's tensor.
  static torch::Tensor Flat(const torch::Tensor& t);

  std::vector<torch::Tensor> keys_;
  std::vector<torch::Tensor> values_;
  int64_t num_blocks_ = 0;
  int64_t block_size_ = 0;
};

// Slot of every position in [begin, end) of a sequence with block table `table`.
std::vector<int64_t> SlotsFor(std::span<const int32_t> table, int64_t block_size, int64_t begin,
                              int64_t end);

}  // namespace sluice::engine
