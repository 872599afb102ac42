// KvBlockManager: per-sequence block tables over a KvBlockAllocator (paged KV cache).
//
// A sequence's block table maps token positions to KV slots: the token at position p lives in
// slot table[p / block_size] * block_size + p % block_size of every layer's cache. Tables share
// blocks in two ways: Fork() (a group of samples shares its prompt's KV) and the prefix cache
// (AllocatePrefix() reuses published full blocks of an identical prefix). A shared block is never
// written: Reserve() copies it first (copy-on-write) and reports the copy, which the caller must
// apply on the device before running the model.
//
// Only full blocks whose KV is computed are published; since writes always begin at a
// sequence's first uncomputed position, a published block is never written again.
//
// Ownership and thread safety: owns its allocator; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "workers/rollout/engine/kv_block_allocator.h"

namespace sluice::engine {

using SeqId = int64_t;

// Copy every layer's KV block `src` into block `dst` (copy-on-write of a shared block). Copies of
// one step must be applied in the order given, before the step's model run.
struct BlockCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

class KvBlockManager {
 public:
  KvBlockManager(int32_t num_blocks, int32_t block_size, bool prefix_cache);

  // Starts `seq`'s block table. With the prefix cache, the table starts with the cached full
  // blocks of `tokens`' prefix (taking a reference on each); returns how many tokens' KV is
  // thereby present: a multiple of block_size, and at most tokens.size() - 1 so that at least one
  // token is computed (its logits give the next token). AlreadyExists if `seq` has a table.
  Result<int64_t> AllocatePrefix(SeqId seq, std::span<const int32_t> tokens);

  // How many free blocks Reserve(seq, write_from, new_total) needs: new blocks to cover
  // new_total tokens, plus one per shared block among those holding positions
  // [write_from, new_total).
  int32_t BlocksNeeded(SeqId seq, int64_t write_from, int64_t new_total) const;
  bool CanReserve(SeqId seq, int64_t write_from, int64_t new_total) const {
    return BlocksNeeded(seq, write_from, new_total) <= NumFreeBlocks();
  }
  // Makes the table cover new_total tokens, about to be written from position write_from (the
  // sequence's first uncomputed token): allocates missing blocks and copies on write every
  // shared block in the written range, appending a BlockCopy to `copies` for each. Unavailable
  // (and nothing changes) when there are not enough free blocks; NotFound for an unknown seq.
  Status Reserve(SeqId seq, int64_t write_from, int64_t new_total, std::vector<BlockCopy>& copies);

  // Gives `child` a table referencing the same blocks as `parent`'s (and the same published
  // prefix). NotFound / AlreadyExists for a missing parent / existing child.
  Status Fork(SeqId parent, SeqId child);

  // Publishes in the prefix cache the blocks of `seq` that are full and computed (positions below
  // computed_tokens) and not yet published. `tokens` is the sequence's whole token list so far.
  // A no-op without the prefix cache.
  void PublishFullBlocks(SeqId seq, std::span<const int32_t> tokens, int64_t computed_tokens);

  // Empties the prefix cache and stops every current sequence from publishing later blocks (their
  // KV was at least partly computed before the call): for a weight swap. Tables are unchanged.
  void ClearPrefixCache();

  // Releases every block of `seq` and forgets it; a no-op for an unknown seq.
  void Free(SeqId seq);

  bool Has(SeqId seq) const { return seqs_.contains(seq); }
  // The table of a known seq (checked).
  const std::vector<BlockId>& BlockTable(SeqId seq) const;

  int32_t NumFreeBlocks() const { return allocator_.NumFreeBlocks(); }
  int32_t block_size() const { return allocator_.block_size(); }
  int32_t num_blocks() const { return allocator_.num_blocks(); }
  const KvBlockAllocator& allocator() const { return allocator_; }

 private:
  struct SeqBlocks {
    std::vector<BlockId> table;
    // The prefix chain: table[0, num_published) are published (possibly as an identical block
    // that Publish returned instead); chain_serial and chain_hash identify the last of them.
    size_t num_published = 0;
    uint64_t chain_serial = 0;
    uint64_t chain_hash = 0;
    bool chain_broken = false;  // A publish failed; later blocks cannot be chained.
  };

  const SeqBlocks& Get(SeqId seq) const;
  size_t BlocksFor(int64_t tokens) const;

  KvBlockAllocator allocator_;
  std::unordered_map<SeqId, SeqBlocks> seqs_;
};

}  // namespace sluice::engine
