#include "workers/rollout/engine/kv_block_manager.h"

#include <algorithm>
#include <string>

#include "common/check.h"

namespace sluice::engine {

KvBlockManager::KvBlockManager(int32_t num_blocks, int32_t block_size, bool prefix_cache)
    : allocator_(num_blocks, block_size, prefix_cache) {}

Result<int64_t> KvBlockManager::AllocatePrefix(SeqId seq, std::span<const int32_t> tokens) {
  if (seqs_.contains(seq)) {
    return Status::AlreadyExists("sequence " + std::to_string(seq) + " already has a block table");
  }
  SeqBlocks& s = seqs_[seq];
  if (!allocator_.prefix_cache_enabled() || tokens.empty()) return int64_t{0};
  const size_t bs = static_cast<size_t>(block_size());
  // Leave at least the last token to compute: its logits are what the caller samples from.
  const size_t max_blocks = (tokens.size() - 1) / bs;
  for (size_t i = 0; i < max_blocks; ++i) {
    std::span<const int32_t> block_tokens = tokens.subspan(i * bs, bs);
    const uint64_t hash = KvBlockAllocator::HashBlock(s.chain_hash, block_tokens);
    std::optional<BlockId> hit = allocator_.Lookup(hash, s.chain_serial, block_tokens);
    if (!hit) break;
    s.table.push_back(*hit);
    s.chain_serial = allocator_.Serial(*hit);
    s.chain_hash = hash;
    s.num_published = s.table.size();
  }
  return static_cast<int64_t>(s.table.size() * bs);
}

size_t KvBlockManager::BlocksFor(int64_t tokens) const {
  if (tokens <= 0) return 0;
  return static_cast<size_t>((tokens + block_size() - 1) / block_size());
}

int32_t KvBlockManager::BlocksNeeded(SeqId seq, int64_t write_from, int64_t new_total) const {
  const SeqBlocks& s = Get(seq);
  const size_t want = BlocksFor(new_total);
  int32_t needed = want > s.table.size() ? static_cast<int32_t>(want - s.table.size()) : 0;
  if (write_from < new_total) {
    const size_t first = static_cast<size_t>(write_from / block_size());
    for (size_t i = first; i < std::min(want, s.table.size()); ++i) {
      if (allocator_.RefCount(s.table[i]) > 1) ++needed;
    }
  }
  return needed;
}

Status KvBlockManager::Reserve(SeqId seq, int64_t write_from, int64_t new_total,
                               std::vector<BlockCopy>& copies) {
  if (!seqs_.contains(seq)) {
    return Status::NotFound("sequence " + std::to_string(seq) + " has no block table");
  }
  SLUICE_CHECK(write_from >= 0 && write_from <= new_total);
  const int32_t needed = BlocksNeeded(seq, write_from, new_total);
  if (needed > NumFreeBlocks()) {
    return Status::Unavailable("sequence " + std::to_string(seq) + " needs " +
                               std::to_string(needed) + " KV blocks to reach " +
                               std::to_string(new_total) + " tokens, but only " +
                               std::to_string(NumFreeBlocks()) + " are free");
  }
  SeqBlocks& s = seqs_[seq];
  const size_t want = BlocksFor(new_total);
  if (write_from < new_total) {
    const size_t first = static_cast<size_t>(write_from / block_size());
    for (size_t i = first; i < std::min(want, s.table.size()); ++i) {
      const BlockId src = s.table[i];
      if (allocator_.RefCount(src) <= 1) continue;
      std::optional<BlockId> dst = allocator_.Allocate();
      SLUICE_CHECK(dst.has_value());  // Counted by BlocksNeeded.
      copies.push_back({src, *dst});
      s.table[i] = *dst;
      allocator_.Release(src);  // Still referenced by the sharers: only the count drops.
    }
  }
  while (s.table.size() < want) {
    std::optional<BlockId> block = allocator_.Allocate();
    SLUICE_CHECK(block.has_value());
    s.table.push_back(*block);
  }
  return Status::Ok();
}

Status KvBlockManager::Fork(SeqId parent, SeqId child) {
  auto it = seqs_.find(parent);
  if (it == seqs_.end()) {
    return Status::NotFound("parent sequence " + std::to_string(parent) + " has no block table");
  }
  if (seqs_.contains(child)) {
    return Status::AlreadyExists("sequence " + std::to_string(child) +
                                 " already has a block table");
  }
  SeqBlocks copy = it->second;
  for (BlockId b : copy.table) allocator_.Retain(b);
  seqs_.emplace(child, std::move(copy));
  return Status::Ok();
}

void KvBlockManager::PublishFullBlocks(SeqId seq, std::span<const int32_t> tokens,
                                       int64_t computed_tokens) {
  if (!allocator_.prefix_cache_enabled()) return;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  SeqBlocks& s = it->second;
  if (s.chain_broken) return;
  const size_t bs = static_cast<size_t>(block_size());
  const int64_t usable = std::min<int64_t>(computed_tokens, static_cast<int64_t>(tokens.size()));
  const size_t full =
      std::min(static_cast<size_t>(std::max<int64_t>(usable, 0)) / bs, s.table.size());
  while (s.num_published < full) {
    std::span<const int32_t> block_tokens = tokens.subspan(s.num_published * bs, bs);
    const uint64_t hash = KvBlockAllocator::HashBlock(s.chain_hash, block_tokens);
    std::optional<BlockId> published =
        allocator_.Publish(s.table[s.num_published], hash, s.chain_serial, block_tokens);
    if (!published) {
      s.chain_broken = true;
      return;
    }
    s.chain_serial = allocator_.Serial(*published);
    s.chain_hash = hash;
    ++s.num_published;
  }
}

void KvBlockManager::ClearPrefixCache() {
  allocator_.ClearPrefixCache();
  for (auto& [seq, s] : seqs_) s.chain_broken = true;
}

void KvBlockManager::Free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (BlockId b : it->second.table) allocator_.Release(b);
  seqs_.erase(it);
}

const std::vector<BlockId>& KvBlockManager::BlockTable(SeqId seq) const { return Get(seq).table; }

const KvBlockManager::SeqBlocks& KvBlockManager::Get(SeqId seq) const {
  auto it = seqs_.find(seq);
  SLUICE_CHECK(it != seqs_.end());
  return it->second;
}

}  // namespace sluice::engine
