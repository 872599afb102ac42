#include "workers/rollout/engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <vector>

namespace sluice::engine {
namespace {

std::vector<int32_t> Prompt(int32_t n, int32_t first = 1000) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

Scheduler Make(SchedulerConfig config) {
  Result<Scheduler> s = Scheduler::Create(config);
  SLUICE_CHECK(s.ok());
  return std::move(s).value();
}

// Samples a token for every chunk that needs one, then completes the step.
void RunStep(Scheduler& s, const StepPlan& plan, int32_t token = 7) {
  for (const ScheduledChunk& c : plan.chunks) {
    if (c.needs_logits) {
      ASSERT_TRUE(s.AppendToken(c.seq, token).ok());
    }
  }
  s.CompleteStep(plan);
}

TEST(SchedulerTest, CreateValidatesTheConfig) {
  EXPECT_EQ(Scheduler::Create({.num_blocks = 0}).status().field(), "scheduler.num_blocks");
  EXPECT_EQ(Scheduler::Create({.num_blocks = 4, .block_size = 0}).status().field(),
            "scheduler.block_size");
  EXPECT_EQ(Scheduler::Create({.num_blocks = 4, .max_tokens_per_step = 0}).status().field(),
            "scheduler.max_tokens_per_step");
  EXPECT_EQ(Scheduler::Create({.num_blocks = 4, .max_running = 0}).status().field(),
            "scheduler.max_running");
  EXPECT_TRUE(Scheduler::Create({.num_blocks = 4}).ok());
}

TEST(SchedulerTest, AddRejectsWhatCouldNeverRun) {
  Scheduler s = Make({.num_blocks = 4, .block_size = 4});
  Status too_big = s.Add(1, Prompt(3), 17);
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("max_total_tokens 17 needs 5 KV blocks"), std::string::npos)
      << too_big.message();
  EXPECT_NE(too_big.message().find("only 4 (16 tokens)"), std::string::npos);
  EXPECT_EQ(s.Add(1, {}, 8).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Add(1, Prompt(9), 8).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.Add(1, Prompt(3), 16).ok());
  EXPECT_EQ(s.Add(1, Prompt(3), 16).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.NumWaiting(), 1u);
}

TEST(SchedulerTest, PrefillsThenDecodesOneTokenPerStep) {
  Scheduler s = Make({.num_blocks = 8, .block_size = 4});
  ASSERT_TRUE(s.Add(1, Prompt(6), 32).ok());
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0], (ScheduledChunk{1, 0, 6, true}));
  EXPECT_EQ(p.num_tokens, 6);
  EXPECT_EQ(s.BlockTable(1).size(), 2u);
  EXPECT_EQ(s.NumRunning(), 1u);
  RunStep(s, p);
  EXPECT_EQ(s.NumComputed(1), 6);
  EXPECT_EQ(s.Tokens(1).size(), 7u);
  for (int64_t pos = 6; pos < 10; ++pos) {
    p = s.Schedule();
    ASSERT_EQ(p.chunks.size(), 1u);
    EXPECT_EQ(p.chunks[0], (ScheduledChunk{1, pos, 1, true}));
    RunStep(s, p);
  }
  EXPECT_EQ(s.BlockTable(1).size(), 3u);  // Covers position 9.
  s.Finish(1);
  EXPECT_EQ(s.NumRunning(), 0u);
  EXPECT_EQ(s.KvUsage(), 0.0);
  EXPECT_FALSE(s.Has(1));
}

TEST(SchedulerTest, LongPromptsArePrefilledInChunks) {
  Scheduler s = Make({.num_blocks = 16, .block_size = 4, .max_tokens_per_step = 8});
  ASSERT_TRUE(s.Add(1, Prompt(20), 40).ok());
  std::vector<ScheduledChunk> seen;
  for (int i = 0; i < 3; ++i) {
    StepPlan p = s.Schedule();
    ASSERT_EQ(p.chunks.size(), 1u);
    EXPECT_LE(p.num_tokens, 8);
    // Every chunk's positions are covered by the block table.
    EXPECT_GE(static_cast<int64_t>(s.BlockTable(1).size()) * 4,
              p.chunks[0].start + p.chunks[0].num_tokens);
    seen.push_back(p.chunks[0]);
    RunStep(s, p);
  }
  EXPECT_EQ(seen,
            (std::vector<ScheduledChunk>{{1, 0, 8, false}, {1, 8, 8, false}, {1, 16, 4, true}}));
  EXPECT_EQ(s.Tokens(1).size(), 21u);
}

TEST(SchedulerTest, TheTokenBudgetIsSharedOldestFirst) {
  Scheduler s = Make({.num_blocks = 32, .block_size = 4, .max_tokens_per_step = 16});
  ASSERT_TRUE(s.Add(1, Prompt(10), 32).ok());
  ASSERT_TRUE(s.Add(2, Prompt(10, 50), 32).ok());
  ASSERT_TRUE(s.Add(3, Prompt(10, 90), 32).ok());
  StepPlan p = s.Schedule();
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{1, 0, 10, true}, {2, 0, 6, false}}));
  EXPECT_EQ(p.num_tokens, 16);
  EXPECT_EQ(s.NumWaiting(), 1u);
  RunStep(s, p);
  // Running sequences first (1 decodes, 2 finishes its prefill), then 3 with what is left.
  p = s.Schedule();
  EXPECT_EQ(p.chunks,
            (std::vector<ScheduledChunk>{{1, 10, 1, true}, {2, 6, 4, true}, {3, 0, 10, true}}));
  EXPECT_EQ(p.num_tokens, 15);
  EXPECT_EQ(s.NumRunning(), 3u);
}

TEST(SchedulerTest, AdmissionIsFifoAndBoundedByMaxRunning) {
  Scheduler s = Make({.num_blocks = 4, .block_size = 4, .max_running = 8});
  ASSERT_TRUE(s.Add(1, Prompt(9), 16).ok());  // 3 blocks.
  ASSERT_TRUE(s.Add(2, Prompt(8), 16).ok());  // 2 blocks: does not fit beside 1.
  ASSERT_TRUE(s.Add(3, Prompt(2), 16).ok());  // Would fit, but may not overtake 2.
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, 1);
  EXPECT_EQ(s.NumWaiting(), 2u);
  RunStep(s, p);
  s.Finish(1);
  p = s.Schedule();
  EXPECT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].seq, 2);
  EXPECT_EQ(p.chunks[1].seq, 3);

  Scheduler limited = Make({.num_blocks = 64, .block_size = 4, .max_running = 2});
  for (SeqId id = 1; id <= 4; ++id) ASSERT_TRUE(limited.Add(id, Prompt(3), 16).ok());
  p = limited.Schedule();
  EXPECT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(limited.NumRunning(), 2u);
  EXPECT_EQ(limited.NumWaiting(), 2u);
}

TEST(SchedulerTest, BlockPressurePreemptsTheNewestSequence) {
  // 4 blocks of 2 tokens; two sequences of 3 tokens each hold 2 blocks.
  Scheduler s = Make({.num_blocks = 4, .block_size = 2, .prefix_cache = false});
  ASSERT_TRUE(s.Add(1, Prompt(3), 8).ok());
  ASSERT_TRUE(s.Add(2, Prompt(3, 50), 8).ok());
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  RunStep(s, p);  // Both now have 4 tokens, 3 computed; position 3 fits their 2nd block.
  p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_TRUE(p.preempted.empty());
  RunStep(s, p);  // 5 tokens each: position 4 needs a 3rd block each, and none is free.
  ASSERT_TRUE(s.Add(3, Prompt(1, 90), 8).ok());  // Waiting: must not be admitted now.

  p = s.Schedule();
  EXPECT_EQ(p.preempted, std::vector<SeqId>{2});
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{1, 4, 1, true}}));
  EXPECT_FALSE(s.IsRunning(2));
  EXPECT_EQ(s.NumComputed(2), 0);
  EXPECT_TRUE(s.BlockTable(2).empty());
  EXPECT_EQ(s.Tokens(2).size(), 5u);  // Kept, to be recomputed.
  EXPECT_EQ(s.NumWaiting(), 2u);
  EXPECT_EQ(s.stats().preemptions, 1);
  RunStep(s, p);
  s.Finish(1);

  // 2 comes back first (front of the queue) and recomputes all its tokens.
  p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0], (ScheduledChunk{2, 0, 5, true}));
  EXPECT_EQ(p.chunks[1].seq, 3);
}

TEST(SchedulerTest, TheNewestSequenceThatCannotGrowPreemptsItself) {
  Scheduler s = Make({.num_blocks = 3, .block_size = 2, .prefix_cache = false});
  ASSERT_TRUE(s.Add(1, Prompt(3), 6).ok());      // 2 blocks.
  ASSERT_TRUE(s.Add(2, Prompt(2, 50), 6).ok());  // 1 block: the pool is full.
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  RunStep(s, p);
  // 1 writes position 3 in its own 2nd block; 2 needs a new block for position 2, finds none,
  // and being the newest, preempts itself rather than the older 1.
  p = s.Schedule();
  EXPECT_EQ(p.preempted, std::vector<SeqId>{2});
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{1, 3, 1, true}}));
  RunStep(s, p);
  // 1 takes the freed block; 2 (3 tokens, 2 blocks) cannot come back yet.
  p = s.Schedule();
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{1, 4, 1, true}}));
  EXPECT_EQ(s.NumWaiting(), 1u);
  RunStep(s, p);
  s.Finish(1);
  p = s.Schedule();
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{2, 0, 3, true}}));
}

TEST(SchedulerTest, ForkSharesThePromptAndCopiesOnWrite) {
  Scheduler s = Make({.num_blocks = 16, .block_size = 4});
  ASSERT_TRUE(s.Add(1, Prompt(10), 32).ok());
  StepPlan p = s.Schedule();
  EXPECT_EQ(s.Fork(1, 2).code(), StatusCode::kInvalidArgument);  // Prefill not computed yet.
  RunStep(s, p, /*token=*/11);
  ASSERT_TRUE(s.Fork(1, 2, /*last_token=*/22).ok());
  ASSERT_TRUE(s.Fork(1, 3, /*last_token=*/33).ok());
  EXPECT_EQ(s.Fork(1, 3).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.Fork(9, 4).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.Tokens(2).back(), 22);
  EXPECT_EQ(s.Tokens(3).back(), 33);
  EXPECT_EQ(s.Tokens(1).back(), 11);
  EXPECT_EQ(s.NumComputed(3), 10);
  EXPECT_EQ(s.BlockTable(2), s.BlockTable(1));
  const std::vector<BlockId> shared = s.BlockTable(1);

  p = s.Schedule();
  EXPECT_EQ(p.chunks,
            (std::vector<ScheduledChunk>{{1, 10, 1, true}, {2, 10, 1, true}, {3, 10, 1, true}}));
  // Position 10 is in the shared 3rd block: the first two writers copy, the last keeps it.
  ASSERT_EQ(p.copies.size(), 2u);
  EXPECT_EQ(p.copies[0].src, shared[2]);
  EXPECT_EQ(p.copies[1].src, shared[2]);
  std::set<BlockId> last_blocks;
  for (SeqId id : {1, 2, 3}) {
    EXPECT_EQ(s.BlockTable(id)[0], shared[0]);
    EXPECT_EQ(s.BlockTable(id)[1], shared[1]);
    last_blocks.insert(s.BlockTable(id)[2]);
    EXPECT_EQ(s.blocks().allocator().RefCount(s.BlockTable(id)[2]), 1);
  }
  EXPECT_EQ(last_blocks.size(), 3u);
  EXPECT_EQ(s.blocks().allocator().RefCount(shared[0]), 3);
}

TEST(SchedulerTest, TheSamePromptHitsThePrefixCache) {
  Scheduler s = Make({.num_blocks = 16, .block_size = 4});
  ASSERT_TRUE(s.Add(1, Prompt(10), 32).ok());
  RunStep(s, s.Schedule());
  // While 1 runs, 2 shares its two full blocks and computes only the rest.
  ASSERT_TRUE(s.Add(2, Prompt(10), 32).ok());
  StepPlan p = s.Schedule();
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{1, 10, 1, true}, {2, 8, 2, true}}));
  EXPECT_EQ(s.BlockTable(2)[0], s.BlockTable(1)[0]);
  EXPECT_EQ(s.BlockTable(2)[1], s.BlockTable(1)[1]);
  EXPECT_NE(s.BlockTable(2)[2], s.BlockTable(1)[2]);
  EXPECT_EQ(s.stats().prefix_cached_tokens, 8);
  RunStep(s, p);
  s.Finish(1);
  s.Finish(2);
  // After both finished, the blocks stay cached for a third.
  ASSERT_TRUE(s.Add(3, Prompt(10), 32).ok());
  p = s.Schedule();
  EXPECT_EQ(p.chunks, (std::vector<ScheduledChunk>{{3, 8, 2, true}}));
  EXPECT_EQ(s.stats().prefix_cached_tokens, 16);
  EXPECT_GE(s.prefix_cache_stats().hits, 4);
}

TEST(SchedulerTest, ClearPrefixCacheStopsReuseOfKvFromBeforeTheClear) {
  Scheduler s = Make({.num_blocks = 32, .block_size = 4, .max_tokens_per_step = 6});
  ASSERT_TRUE(s.Add(1, Prompt(10), 32).ok());
  RunStep(s, s.Schedule());  // 6 of 10 prompt tokens computed; block 0 published.
  ASSERT_EQ(s.NumComputed(1), 6);
  s.ClearPrefixCache();      // A weight swap.
  RunStep(s, s.Schedule());  // The rest of the prompt: its blocks must not be published.
  ASSERT_EQ(s.NumComputed(1), 10);
  ASSERT_TRUE(s.Add(2, Prompt(10), 32).ok());
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[1], (ScheduledChunk{2, 0, 5, false}));
  EXPECT_EQ(s.stats().prefix_cached_tokens, 0);
  RunStep(s, p);
  RunStep(s, s.Schedule());
  // Sequences computed after the clear publish again.
  ASSERT_TRUE(s.Add(3, Prompt(10), 32).ok());
  p = s.Schedule();
  EXPECT_EQ(p.chunks.back(), (ScheduledChunk{3, 8, 2, true}));
}

TEST(SchedulerTest, FinishWorksForWaitingSequencesAndStaleChunks) {
  Scheduler s = Make({.num_blocks = 8, .block_size = 4});
  ASSERT_TRUE(s.Add(1, Prompt(5), 16).ok());
  ASSERT_TRUE(s.Add(2, Prompt(5), 16).ok());
  StepPlan p = s.Schedule();
  s.Finish(1);  // Before CompleteStep: its chunk is ignored.
  s.CompleteStep(p);
  EXPECT_EQ(s.NumComputed(2), 5);
  ASSERT_TRUE(s.Add(3, Prompt(2), 16).ok());
  s.Finish(3);
  EXPECT_EQ(s.NumWaiting(), 0u);
  s.Finish(3);  // Idempotent.
  EXPECT_EQ(s.AppendToken(3, 1).code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.AppendTokens(2, Prompt(11)).ok());
  EXPECT_EQ(s.AppendToken(2, 1).code(), StatusCode::kInvalidArgument);  // Past 16 tokens.
}

// A fake KV cache: each slot holds a fingerprint of the prefix whose last token was written
// there, so a wrong copy, a missing copy-on-write or a wrong prefix-cache hit shows up as a
// mismatch when a sequence's computed positions are checked.
class FakeKv {
 public:
  FakeKv(int32_t num_blocks, int32_t block_size)
      : block_size_(block_size), slots_(static_cast<size_t>(num_blocks * block_size), 0) {}

  static std::vector<uint64_t> Fingerprints(const std::vector<int32_t>& tokens) {
    std::vector<uint64_t> out;
    uint64_t h = 1469598103934665603ULL;
    for (int32_t t : tokens) {
      h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ULL;
      out.push_back(h);
    }
    return out;
  }
  void Copy(const BlockCopy& c) {
    for (int32_t i = 0; i < block_size_; ++i) slots_[Slot(c.dst, i)] = slots_[Slot(c.src, i)];
  }
  uint64_t& At(const std::vector<BlockId>& table, int64_t pos) {
    return slots_[Slot(table[static_cast<size_t>(pos / block_size_)],
                       static_cast<int32_t>(pos % block_size_))];
  }

 private:
  size_t Slot(BlockId block, int32_t offset) const {
    return static_cast<size_t>(block) * static_cast<size_t>(block_size_) +
           static_cast<size_t>(offset);
  }
  int32_t block_size_;
  std::vector<uint64_t> slots_;
};

struct SimParams {
  uint32_t seed;
  bool prefix_cache;
  bool forks;
  // CompleteStep before sampling; forks copy the parent before it appends (the torch engine's
  // order) instead of forking after the append with last_token.
  bool complete_first = false;
};

void PrintTo(const SimParams& p, std::ostream* os) {
  *os << "seed=" << p.seed << " prefix_cache=" << p.prefix_cache << " forks=" << p.forks
      << " complete_first=" << p.complete_first;
}

class SchedulerSimulationTest : public ::testing::TestWithParam<SimParams> {};

TEST_P(SchedulerSimulationTest, EverySequenceFinishesAndInvariantsHold) {
  const SimParams param = GetParam();
  const SchedulerConfig config{.num_blocks = 24,
                               .block_size = 4,
                               .max_tokens_per_step = 24,
                               .max_running = 6,
                               .prefix_cache = param.prefix_cache};
  Scheduler s = Make(config);
  FakeKv kv(config.num_blocks, config.block_size);
  std::mt19937 rng(param.seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  // A few shared system prompts make prefix-cache hits likely.
  std::vector<std::vector<int32_t>> system_prompts;
  for (int i = 0; i < 3; ++i) system_prompts.push_back(Prompt(uniform(4, 20), 5000 * (i + 1)));

  struct Target {
    int64_t total;  // Finish once the sequence holds this many tokens.
    int forks_left;
  };
  std::map<SeqId, Target> live;
  const int kSequences = 80;
  SeqId next_id = 0;
  int added = 0;
  int finished = 0;
  int64_t steps = 0;

  auto add_one = [&] {
    std::vector<int32_t> tokens;
    if (uniform(0, 1) == 0) tokens = system_prompts[static_cast<size_t>(uniform(0, 2))];
    const int own = uniform(1, 30);
    for (int i = 0; i < own; ++i) tokens.push_back(uniform(0, 99));
    const int64_t total = std::min<int64_t>(static_cast<int64_t>(tokens.size()) + uniform(1, 30),
                                            config.num_blocks * config.block_size);
    if (static_cast<int64_t>(tokens.size()) >= total) tokens.resize(static_cast<size_t>(total - 1));
    const SeqId id = next_id++;
    ASSERT_TRUE(s.Add(id, tokens, total).ok());
    live[id] = {total, param.forks ? uniform(0, 2) : 0};
    ++added;
  };

  while (finished < added || added < kSequences) {
    ASSERT_LT(++steps, 20000) << "no progress: " << s.NumRunning() << " running, " << s.NumWaiting()
                              << " waiting";
    for (int k = uniform(0, 3); k > 0 && added < kSequences; --k) add_one();
    if (live.empty()) continue;

    std::set<SeqId> running_before;
    for (const auto& [id, target] : live) {
      if (s.IsRunning(id)) running_before.insert(id);
    }
    StepPlan plan = s.Schedule();
    ASSERT_FALSE(plan.empty()) << "a step with " << live.size() << " sequences scheduled nothing";

    // Budget and chunk shape.
    int64_t sum = 0;
    std::set<SeqId> in_plan;
    for (const ScheduledChunk& c : plan.chunks) {
      sum += c.num_tokens;
      ASSERT_TRUE(in_plan.insert(c.seq).second) << "two chunks for one sequence";
      ASSERT_TRUE(s.IsRunning(c.seq));
      ASSERT_EQ(c.start, s.NumComputed(c.seq));
      ASSERT_GE(c.num_tokens, 1);
      const int64_t end = c.start + c.num_tokens;
      ASSERT_LE(end, static_cast<int64_t>(s.Tokens(c.seq).size()));
      ASSERT_EQ(c.needs_logits, end == static_cast<int64_t>(s.Tokens(c.seq).size()));
      ASSERT_GE(static_cast<int64_t>(s.BlockTable(c.seq).size()) * config.block_size, end);
    }
    ASSERT_EQ(sum, plan.num_tokens);
    ASSERT_LE(sum, config.max_tokens_per_step);
    for (SeqId id : plan.preempted) ASSERT_FALSE(in_plan.contains(id));
    if (!plan.preempted.empty()) {
      for (const ScheduledChunk& c : plan.chunks) {
        ASSERT_TRUE(running_before.contains(c.seq)) << "admitted in a step that preempted";
      }
    }

    // Reference counts: every block's count is the number of tables holding it, and the
    // allocator's free count matches the blocks nobody holds.
    std::map<BlockId, int32_t> holders;
    for (const auto& [id, target] : live) {
      if (!s.IsRunning(id)) {
        ASSERT_TRUE(s.BlockTable(id).empty());
        continue;
      }
      for (BlockId b : s.BlockTable(id)) ++holders[b];
    }
    const KvBlockAllocator& alloc = s.blocks().allocator();
    int32_t in_use = 0;
    for (BlockId b = 0; b < config.num_blocks; ++b) {
      ASSERT_EQ(alloc.RefCount(b), holders.contains(b) ? holders[b] : 0) << "block " << b;
      if (alloc.RefCount(b) > 0) ++in_use;
    }
    ASSERT_EQ(in_use + alloc.NumFreeBlocks(), config.num_blocks);

    // The "model": copies first, then each chunk writes its positions, never into a shared
    // block.
    for (const BlockCopy& c : plan.copies) kv.Copy(c);
    for (const ScheduledChunk& c : plan.chunks) {
      const std::vector<uint64_t> fp = FakeKv::Fingerprints(s.Tokens(c.seq));
      const std::vector<BlockId>& table = s.BlockTable(c.seq);
      for (int64_t pos = c.start; pos < c.start + c.num_tokens; ++pos) {
        const BlockId block = table[static_cast<size_t>(pos / config.block_size)];
        ASSERT_EQ(alloc.RefCount(block), 1) << "write into shared block " << block;
        ASSERT_FALSE(alloc.IsPublished(block)) << "write into published block " << block;
        kv.At(table, pos) = fp[static_cast<size_t>(pos)];
      }
    }
    if (!param.complete_first) {
      for (const ScheduledChunk& c : plan.chunks) {
        if (c.needs_logits) {
          ASSERT_TRUE(s.AppendToken(c.seq, uniform(0, 99)).ok());
        }
      }
    }
    s.CompleteStep(plan);

    // Every computed position of every running sequence holds its own prefix's KV.
    for (const auto& [id, target] : live) {
      if (!s.IsRunning(id)) continue;
      const std::vector<uint64_t> fp = FakeKv::Fingerprints(s.Tokens(id));
      for (int64_t pos = 0; pos < s.NumComputed(id); ++pos) {
        ASSERT_EQ(kv.At(s.BlockTable(id), pos), fp[static_cast<size_t>(pos)])
            << "sequence " << id << " position " << pos;
      }
    }

    // Forks right after a prefill, each child with its own first token.
    for (const ScheduledChunk& c : plan.chunks) {
      if (!c.needs_logits) continue;
      Target& t = live[c.seq];
      std::vector<SeqId> group = {c.seq};
      const int64_t size = static_cast<int64_t>(s.Tokens(c.seq).size());
      for (; t.forks_left > 0 && size < t.total; --t.forks_left) {
        const SeqId child = next_id++;
        if (param.complete_first) {
          ASSERT_TRUE(s.Fork(c.seq, child).ok());
          group.push_back(child);
        } else {
          ASSERT_TRUE(s.Fork(c.seq, child, uniform(0, 99)).ok());
        }
        live[child] = {t.total, 0};
        ++added;
      }
      if (param.complete_first) {
        for (SeqId id : group) ASSERT_TRUE(s.AppendToken(id, uniform(0, 99)).ok());
      }
    }
    if (steps % 97 == 0) s.ClearPrefixCache();  // Weight swaps now and then.
    for (auto it = live.begin(); it != live.end();) {
      if (static_cast<int64_t>(s.Tokens(it->first).size()) >= it->second.total) {
        s.Finish(it->first);
        ++finished;
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  EXPECT_EQ(s.NumRunning(), 0u);
  EXPECT_EQ(s.NumWaiting(), 0u);
  EXPECT_EQ(s.KvUsage(), 0.0);
  EXPECT_EQ(s.blocks().NumFreeBlocks(), config.num_blocks);
  // The pool is small enough that preemption really happened.
  EXPECT_GT(s.stats().preemptions, 0);
  if (param.prefix_cache) {
    EXPECT_GT(s.stats().prefix_cached_tokens, 0);
  } else {
    EXPECT_EQ(s.stats().prefix_cached_tokens, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchedulerSimulationTest,
                         ::testing::Values(SimParams{1, true, false}, SimParams{2, true, true},
                                           SimParams{3, false, false}, SimParams{4, false, true},
                                           SimParams{5, true, true}, SimParams{6, true, true},
                                           SimParams{7, false, true}, SimParams{8, true, false},
                                           SimParams{9, true, true, true},
                                           SimParams{10, true, true, true},
                                           SimParams{11, false, true, true},
                                           SimParams{12, true, false, true}));

}  // namespace
}  // namespace sluice::engine
