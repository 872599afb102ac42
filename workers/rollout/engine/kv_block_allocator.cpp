#include "workers/rollout/engine/kv_block_allocator.h"

#include <algorithm>

#include "common/check.h"
#include "common/splitmix64.h"

namespace sluice::engine {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

uint64_t FnvBytes(uint64_t h, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    h ^= (value >> (8 * i)) & 0xff;
    h *= kFnvPrime;
  }
  return h;
}

// splitmix64's finaliser: FNV-1a alone diffuses poorly into the high bits, and the hash is used
// as a hash-table key.
uint64_t Finalise(uint64_t z) { return Mix64(z); }

}  // namespace

KvBlockAllocator::KvBlockAllocator(int32_t num_blocks, int32_t block_size, bool prefix_cache)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      prefix_cache_(prefix_cache),
      blocks_(static_cast<size_t>(num_blocks)) {
  SLUICE_CHECK(num_blocks >= 1 && block_size >= 1);
  free_.reserve(static_cast<size_t>(num_blocks));
  for (BlockId b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<BlockId> KvBlockAllocator::Allocate() {
  BlockId block = kNoBlock;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (lru_head_ != kNoBlock) {
    block = lru_head_;
    LruRemove(block);
    Unpublish(block);
    ++stats_.evictions;
  } else {
    return std::nullopt;
  }
  blocks_[block].ref_count = 1;
  return block;
}

void KvBlockAllocator::Retain(BlockId block) {
  SLUICE_CHECK(block >= 0 && block < num_blocks_ && blocks_[block].ref_count > 0);
  ++blocks_[block].ref_count;
}

void KvBlockAllocator::Release(BlockId block) {
  SLUICE_CHECK(block >= 0 && block < num_blocks_ && blocks_[block].ref_count > 0);
  if (--blocks_[block].ref_count > 0) return;
  if (blocks_[block].serial != 0) {
    LruPushBack(block);
  } else {
    free_.push_back(block);
  }
}

std::optional<BlockId> KvBlockAllocator::Publish(BlockId block, uint64_t hash,
                                                 uint64_t parent_serial,
                                                 std::span<const int32_t> tokens) {
  SLUICE_CHECK(block >= 0 && block < num_blocks_ && blocks_[block].ref_count > 0);
  SLUICE_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  if (!prefix_cache_) return std::nullopt;
  // Already published, by this block (a forked sibling got here first) or by an identical prefix
  // computed by another sequence: keep that one, so the cache holds each prefix once.
  if (BlockId same = Find(hash, parent_serial, tokens); same != kNoBlock) return same;
  Block& b = blocks_[block];
  if (b.serial != 0) return std::nullopt;
  b.serial = next_serial_++;
  b.hash = hash;
  b.parent_serial = parent_serial;
  b.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(hash, block);
  return block;
}

std::optional<BlockId> KvBlockAllocator::Lookup(uint64_t hash, uint64_t parent_serial,
                                                std::span<const int32_t> tokens) {
  if (!prefix_cache_) return std::nullopt;
  const BlockId block = Find(hash, parent_serial, tokens);
  if (block == kNoBlock) {
    ++stats_.misses;
    return std::nullopt;
  }
  if (blocks_[block].ref_count == 0) LruRemove(block);
  ++blocks_[block].ref_count;
  ++stats_.hits;
  return block;
}

void KvBlockAllocator::ClearPrefixCache() {
  for (BlockId b = 0; b < num_blocks_; ++b) {
    if (blocks_[b].serial == 0) continue;
    if (blocks_[b].ref_count == 0) {
      LruRemove(b);
      free_.push_back(b);
    }
    Unpublish(b);
  }
}

uint64_t KvBlockAllocator::HashBlock(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = FnvBytes(kFnvOffset, parent_hash, 8);
  h = FnvBytes(h, tokens.size(), 8);
  for (int32_t t : tokens) h = FnvBytes(h, static_cast<uint32_t>(t), 4);
  return Finalise(h);
}

int32_t KvBlockAllocator::RefCount(BlockId block) const {
  SLUICE_CHECK(block >= 0 && block < num_blocks_);
  return blocks_[block].ref_count;
}

int32_t KvBlockAllocator::NumFreeBlocks() const {
  return static_cast<int32_t>(free_.size()) + num_cached_free_;
}

uint64_t KvBlockAllocator::Serial(BlockId block) const {
  SLUICE_CHECK(block >= 0 && block < num_blocks_);
  return blocks_[block].serial;
}

BlockId KvBlockAllocator::Find(uint64_t hash, uint64_t parent_serial,
                               std::span<const int32_t> tokens) const {
  auto [begin, end] = by_hash_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const Block& c = blocks_[it->second];
    if (c.parent_serial == parent_serial && std::ranges::equal(c.tokens, tokens)) {
      return it->second;
    }
  }
  return kNoBlock;
}

void KvBlockAllocator::LruPushBack(BlockId block) {
  Block& b = blocks_[block];
  b.lru_prev = lru_tail_;
  b.lru_next = kNoBlock;
  if (lru_tail_ != kNoBlock) {
    blocks_[lru_tail_].lru_next = block;
  } else {
    lru_head_ = block;
  }
  lru_tail_ = block;
  ++num_cached_free_;
}

void KvBlockAllocator::LruRemove(BlockId block) {
  Block& b = blocks_[block];
  if (b.lru_prev != kNoBlock) {
    blocks_[b.lru_prev].lru_next = b.lru_next;
  } else {
    lru_head_ = b.lru_next;
  }
  if (b.lru_next != kNoBlock) {
    blocks_[b.lru_next].lru_prev = b.lru_prev;
  } else {
    lru_tail_ = b.lru_prev;
  }
  b.lru_prev = b.lru_next = kNoBlock;
  --num_cached_free_;
}

void KvBlockAllocator::Unpublish(BlockId block) {
  Block& b = blocks_[block];
  if (b.serial == 0) return;
  auto [begin, end] = by_hash_.equal_range(b.hash);
  for (auto it = begin; it != end; ++it) {
    if (it->second == block) {
      by_hash_.erase(it);
      break;
    }
  }
  b.serial = 0;
  b.hash = 0;
  b.parent_serial = 0;
  b.tokens.clear();
}

}  // namespace sluice::engine
