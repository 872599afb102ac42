// KvBlockAllocator: the fixed pool of paged-KV-cache blocks, with reference counts and a prefix
// cache of full blocks keyed by content.
//
// The KV cache is num_blocks blocks of block_size token slots each (the tensors themselves live
// on the device side; this class only hands out block ids 0..num_blocks-1). A block is in one of
// three states:
//   - in use: reference count > 0 (held by one or more sequences' block tables);
//   - plain free: count 0, no content worth keeping;
//   - cached free: count 0 but published in the prefix cache, so a later request with the same
//     prefix can revive it instead of recomputing. Cached free blocks are evicted least recently
//     released first, and only when Allocate() finds no plain free block.
//
// Prefix cache exactness: a published block is keyed by a chained 64-bit hash (HashBlock), but a
// hash match alone is never trusted. Each publication stores the block's tokens and the identity
// of the publication of its parent block (the block holding the previous block_size tokens), and
// Lookup() checks both. By induction over the chain, a Lookup hit means the block holds the KV of
// exactly the same whole prefix, even if two different prefixes ever hash alike.
//
// Ownership and thread safety: owns only bookkeeping; not thread-safe (the engine's scheduler
// drives it from one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace sluice::engine {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

struct PrefixCacheStats {
  int64_t hits = 0;       // Lookup() calls that returned a block.
  int64_t misses = 0;     // Lookup() calls that did not.
  int64_t evictions = 0;  // Cached free blocks whose content was dropped to satisfy Allocate().
};

class KvBlockAllocator {
 public:
  // num_blocks >= 1 blocks of block_size >= 1 tokens. With prefix_cache false, Publish() and
  // Lookup() do nothing and every released block is plain free.
  KvBlockAllocator(int32_t num_blocks, int32_t block_size, bool prefix_cache);

  // A block with reference count 1: a plain free one if any, else the least recently released
  // cached one (its content is evicted). nullopt when every block is in use.
  std::optional<BlockId> Allocate();
  // Adds a reference to a block in use.
  void Retain(BlockId block);
  // Drops a reference; at zero the block becomes cached free if published, else plain free.
  void Release(BlockId block);

  // Publishes a full block whose KV is computed, so Lookup() can find it. `parent_serial`
  // identifies the publication of the block holding the previous block_size tokens of the same
  // sequence (Serial() of the block an earlier Publish() or Lookup() returned, read right then;
  // 0 for the first block); `hash` is HashBlock(parent's hash, tokens); `tokens` has block_size
  // entries.
  //
  // Returns the block under which this content is now published: `block` itself, or an already
  // published block holding exactly the same prefix (then `block` stays unpublished; chain the
  // next block to the returned one). nullopt when the prefix cache is off or `block` is already
  // published as something else.
  std::optional<BlockId> Publish(BlockId block, uint64_t hash, uint64_t parent_serial,
                                 std::span<const int32_t> tokens);
  // The published block holding exactly (parent's prefix + tokens), with a reference taken
  // (reviving it if cached free), or nullopt. Arguments as for Publish().
  std::optional<BlockId> Lookup(uint64_t hash, uint64_t parent_serial,
                                std::span<const int32_t> tokens);
  // A published block's publication identity (0 when unpublished). Serials are never reused, so
  // a child publication naming an evicted parent can never match a later, different prefix.
  uint64_t Serial(BlockId block) const;

  // Unpublishes every block (cached free ones become plain free), so no later Lookup() returns
  // KV computed before the call: for a weight swap, which makes all cached KV stale.
  void ClearPrefixCache();

  // Chained content hash of a full block: mixes the parent block's hash (0 for the first block)
  // with the block's tokens. A strong 64-bit mix, but Lookup() never relies on it alone.
  static uint64_t HashBlock(uint64_t parent_hash, std::span<const int32_t> tokens);

  int32_t RefCount(BlockId block) const;
  bool IsPublished(BlockId block) const { return Serial(block) != 0; }
  // Plain free plus cached free blocks: how many Allocate() calls would succeed in a row.
  int32_t NumFreeBlocks() const;
  // Blocks with reference count > 0.
  int32_t NumUsedBlocks() const { return num_blocks_ - NumFreeBlocks(); }
  // Cached free blocks (a subset of NumFreeBlocks()).
  int32_t NumCachedFreeBlocks() const { return num_cached_free_; }

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  bool prefix_cache_enabled() const { return prefix_cache_; }
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Block {
    int32_t ref_count = 0;
    uint64_t serial = 0;  // Publication identity, 0 when unpublished.
    uint64_t hash = 0;
    uint64_t parent_serial = 0;
    std::vector<int32_t> tokens;  // The published content (empty when unpublished).
    // Intrusive LRU list of cached free blocks (kNoBlock-terminated).
    BlockId lru_prev = kNoBlock;
    BlockId lru_next = kNoBlock;
  };

  // The published block under `hash` holding exactly this content, or kNoBlock.
  BlockId Find(uint64_t hash, uint64_t parent_serial, std::span<const int32_t> tokens) const;
  void LruPushBack(BlockId block);
  void LruRemove(BlockId block);
  void Unpublish(BlockId block);

  int32_t num_blocks_;
  int32_t block_size_;
  bool prefix_cache_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;  // Plain free blocks; a stack, so recently freed ids come back first.
  BlockId lru_head_ = kNoBlock;  // Least recently released cached free block.
  BlockId lru_tail_ = kNoBlock;
  int32_t num_cached_free_ = 0;
  // Several publications may share a hash: a collision, or the same content under an evicted and
  // a live parent (the orphan stays until evicted). Lookups check every candidate.
  std::unordered_multimap<uint64_t, BlockId> by_hash_;
  uint64_t next_serial_ = 1;
  PrefixCacheStats stats_;
};

}  // namespace sluice::engine
