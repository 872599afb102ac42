// Scheduler: continuous batching over the paged KV cache, one engine step at a time.
//
// A sequence is a token list (prompt, then each sampled or appended token) of which the first
// NumComputed() tokens have their KV in the cache. Each step the engine loop does:
//
//   StepPlan plan = scheduler.Schedule();
//   apply plan.copies in order (every layer: block src -> block dst);
//   run the model on plan.chunks (tokens [start, start + num_tokens) of each sequence, KV slots
//     from BlockTable(seq));
//   scheduler.CompleteStep(plan);
//   for each chunk with needs_logits: sample a token, then AppendToken(seq, token) or, when the
//     sequence is done, Finish(seq). (Sampling and appending may also precede CompleteStep.)
//   Fork(seq, child) right after CompleteStep gives a group's further samples, each then
//     AppendToken-ing its own token drawn from the same logits.
//
// Policy (each Schedule):
//   1. Running sequences, oldest first, each get their next chunk within max_tokens_per_step:
//      one token when decoding, up to the remaining prompt when (re)prefilling (chunked prefill;
//      a prefill chunk shrinks to the blocks that are free). A sequence that cannot get even one
//      token's blocks preempts the newest running sequence (its blocks are freed, its computed
//      count drops to 0, and it goes to the front of the waiting queue, to be recomputed from its
//      tokens, with the prefix cache's help), repeatedly, until it fits or is itself the newest
//      (then it is preempted).
//   2. Unless step 1 preempted anything, waiting sequences are admitted in FIFO order (never
//      skipping one) while the token budget, max_running and the blocks allow: a sequence is
//      admitted only if blocks for all its tokens are free, its cached prefix (prefix cache) is
//      skipped, and it gets a partial prefill chunk when its prompt is longer than the budget
//      left.
// Progress: Add() rejects a sequence that could not fit in the whole pool, and the oldest
// running sequence is never preempted by a younger one, so the oldest always advances and every
// sequence eventually finishes (provided the caller Finishes sequences).
//
// Ownership and thread safety: owns the block manager and the sequences' tokens; not
// thread-safe (one engine loop drives it).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "workers/rollout/engine/kv_block_manager.h"

namespace sluice::engine {

struct SchedulerConfig {
  int32_t num_blocks = 0;              // KV cache blocks in the pool, >= 1.
  int32_t block_size = 16;             // Tokens per block, >= 1.
  int64_t max_tokens_per_step = 2048;  // Tokens computed per step (all chunks), >= 1.
  int32_t max_running = 256;           // Running sequences admitted at most, >= 1.
  bool prefix_cache = true;            // Reuse computed full blocks across sequences.
};

// InvalidArgument naming the field ("scheduler.block_size: must be >= 1, got 0").
Status Validate(const SchedulerConfig& config);

// Tokens [start, start + num_tokens) of `seq` to run through the model this step.
struct ScheduledChunk {
  SeqId seq = 0;
  int64_t start = 0;
  int64_t num_tokens = 0;
  // The chunk ends at the sequence's last token: sample the next token from its last logits.
  bool needs_logits = false;
  friend bool operator==(const ScheduledChunk&, const ScheduledChunk&) = default;
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;  // At most one per sequence.
  std::vector<BlockCopy> copies;       // Apply in order, before running the model.
  std::vector<SeqId> preempted;        // Moved back to waiting this step (their KV is gone).
  int64_t num_tokens = 0;              // Sum of chunks' num_tokens, <= max_tokens_per_step.
  bool empty() const { return chunks.empty(); }
};

struct SchedulerStats {
  int64_t prompt_tokens_admitted = 0;  // Tokens of sequences at admission (incl. re-admission).
  int64_t prefix_cached_tokens = 0;    // Of those, found in the prefix cache.
  int64_t preemptions = 0;
};

class Scheduler {
 public:
  // InvalidArgument for a config that fails Validate().
  static Result<Scheduler> Create(const SchedulerConfig& config);

  // Queues a new sequence (FIFO) that will hold at most max_total_tokens tokens (prompt plus
  // generated). InvalidArgument for empty tokens, more tokens than max_total_tokens, or a
  // max_total_tokens that needs more blocks than the pool has; AlreadyExists for a known seq.
  Status Add(SeqId seq, std::vector<int32_t> tokens, int64_t max_total_tokens);

  // Starts `child` as a running copy of the running `parent` (tokens, computed count, and
  // blocks, shared): for a group of samples of one prompt. The parent must have every token
  // computed except possibly its last, freshly appended one. With `last_token`, that uncomputed
  // last token is replaced by the child's own sample; the parent must then have one. (Without
  // it, fork when the parent has no uncomputed token and append each sample's own token.) The
  // child is the newest sequence and keeps the parent's max_total_tokens.
  Status Fork(SeqId parent, SeqId child, std::optional<int32_t> last_token = std::nullopt);

  // Plans the next step (policy above). Changes block tables; Schedule again only after
  // CompleteStep.
  StepPlan Schedule();

  // Appends a token (a sample, or e.g. tool output) to a known sequence; its KV is computed in a
  // later step. InvalidArgument past the sequence's max_total_tokens, NotFound for an unknown
  // seq.
  Status AppendToken(SeqId seq, int32_t token);
  Status AppendTokens(SeqId seq, std::span<const int32_t> tokens);

  // Marks the plan's chunks computed and publishes newly full blocks to the prefix cache. Chunks
  // of sequences Finished since Schedule are ignored.
  void CompleteStep(const StepPlan& plan);

  // After a weight swap: no cached or currently held KV is offered to later sequences (running
  // sequences keep their own KV; preempted ones are recomputed with the new weights).
  void ClearPrefixCache() { blocks_.ClearPrefixCache(); }

  // Forgets a sequence, running or waiting, and frees its blocks; a no-op for an unknown seq.
  void Finish(SeqId seq);

  bool Has(SeqId seq) const { return seqs_.contains(seq); }
  bool IsRunning(SeqId seq) const;
  // The following take a known seq (checked).
  const std::vector<int32_t>& Tokens(SeqId seq) const;
  int64_t NumComputed(SeqId seq) const;
  // Empty while the sequence waits.
  const std::vector<BlockId>& BlockTable(SeqId seq) const;

  size_t NumRunning() const { return running_.size(); }
  size_t NumWaiting() const { return waiting_.size(); }
  // Fraction of the pool's blocks referenced by sequences (cached free blocks count as free).
  double KvUsage() const;
  const SchedulerStats& stats() const { return stats_; }
  const PrefixCacheStats& prefix_cache_stats() const { return blocks_.allocator().stats(); }
  const KvBlockManager& blocks() const { return blocks_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  struct Sequence {
    std::vector<int32_t> tokens;
    int64_t num_computed = 0;
    int64_t max_total_tokens = 0;
    uint64_t arrival = 0;  // Orders age: smaller is older.
    bool running = false;
  };

  explicit Scheduler(const SchedulerConfig& config);

  Sequence& Get(SeqId seq);
  const Sequence& Get(SeqId seq) const;
  // The most tokens in [1, want] that `seq` can reserve from `start` with the free blocks; 0 if
  // not even one.
  int64_t MaxReservable(SeqId seq, int64_t start, int64_t want) const;
  void Preempt(SeqId seq, StepPlan& plan);
  void InsertRunning(SeqId seq);
  void Admit(StepPlan& plan, int64_t& budget);

  SchedulerConfig config_;
  KvBlockManager blocks_;
  std::unordered_map<SeqId, Sequence> seqs_;
  std::vector<SeqId> running_;  // Oldest first.
  std::deque<SeqId> waiting_;   // Admission order.
  uint64_t next_arrival_ = 0;
  SchedulerStats stats_;
};

}  // namespace sluice::engine
