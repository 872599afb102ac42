#include "workers/dataflow/algorithms/replay.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace sluice::dataflow {
namespace {

ReplayMemory MakeMemory(ReplayOptions o) {
  auto m = ReplayMemory::Create(o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

TEST(DataflowReplayTest, PickProportional) {
  const std::vector<double> w = {1, 0, 3};  // Σ = 4; slots [0, 1) → 0, [1, 4) → 2.
  struct Case {
    double u;
    size_t index;
  };
  const Case cases[] = {{0.0, 0}, {0.24, 0}, {0.25, 2}, {0.5, 2}, {0.999, 2}};
  for (const Case& c : cases) EXPECT_EQ(PickProportional(w, c.u), c.index) << c.u;
  EXPECT_EQ(PickProportional(std::vector<double>{0, 2, 0}, 0.9999999), 1U);
}

TEST(DataflowReplayTest, LatestEvictsOldestAndCountsReuse) {
  ReplayOptions o;
  o.replay_ratio = 0.5;
  o.capacity = 3;
  ReplayMemory m = MakeMemory(o);
  std::mt19937_64 rng(1);
  EXPECT_EQ(m.ReplayCount(8), 0U);  // Empty memory.
  EXPECT_TRUE(m.Select(2, rng).empty());
  for (uint64_t id = 1; id <= 4; ++id) m.Add(id, 0.0);
  ASSERT_EQ(m.size(), 3U);  // Group 1 evicted.
  EXPECT_EQ(m.entries().front().group_id, 2U);
  EXPECT_EQ(m.ReplayCount(4), 2U);   // floor(4 × 0.5).
  EXPECT_EQ(m.ReplayCount(10), 3U);  // floor(5) capped at size 3.
  EXPECT_EQ(m.ReplayCount(1), 0U);   // floor(0.5).
  EXPECT_EQ(m.Select(2, rng), (std::vector<uint64_t>{4, 3}));
  EXPECT_EQ(m.Select(5, rng), (std::vector<uint64_t>{4, 3, 2}));
  // Reuse: 2 once, 3 twice, 4 twice.
  EXPECT_EQ(m.entries()[0].reuse_count, 1);
  EXPECT_EQ(m.entries()[1].reuse_count, 2);
  EXPECT_EQ(m.entries()[2].reuse_count, 2);
}

TEST(DataflowReplayTest, PrioritizedFavoursLargeAdvantage) {
  ReplayOptions o;
  o.replay_ratio = 0.5;
  o.selector = ReplaySelector::kPrioritized;
  o.alpha = 1.0;
  o.epsilon = 1e-12;
  // Priorities 0, 0, 5: the third has weight 5 against 1e-12 each; picked first every time.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    ReplayMemory m = MakeMemory(o);
    m.Add(1, 0.0);
    m.Add(2, 0.0);
    m.Add(3, 5.0);
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> picked = m.Select(3, rng);
    ASSERT_EQ(picked.size(), 3U);
    EXPECT_EQ(picked[0], 3U);
    EXPECT_EQ(std::set<uint64_t>(picked.begin(), picked.end()).size(), 3U);  // No repeats.
  }
}

TEST(DataflowReplayTest, PrioritizedFrequencies) {
  // Priorities 1 and 3, alpha 1: first pick is group 2 with probability 3 / 4. With alpha 0,
  // 1 / 2. 4000 seeded draws; the tolerance is ~5 standard deviations (sqrt(.25·.75/4000)).
  for (double alpha : {1.0, 0.0}) {
    ReplayOptions o;
    o.selector = ReplaySelector::kPrioritized;
    o.alpha = alpha;
    o.epsilon = 1e-12;
    std::mt19937_64 rng(42);
    int second_first = 0;
    const int trials = 4000;
    for (int t = 0; t < trials; ++t) {
      ReplayMemory m = MakeMemory(o);
      m.Add(1, 1.0);
      m.Add(2, 3.0);
      if (m.Select(1, rng)[0] == 2) ++second_first;
    }
    EXPECT_NEAR(second_first / static_cast<double>(trials), alpha == 1.0 ? 0.75 : 0.5, 0.035);
  }
}

TEST(DataflowReplayTest, GroupPriority) {
  Sample a;
  a.advantage = 1.0;
  Sample b;
  b.advantage = -3.0;
  Sample c;
  c.reward = 1.0;
  c.group_mean = 0.25;                                                // No advantage: |1 − 0.25|.
  Sample d;                                                           // Neither: 0.
  EXPECT_DOUBLE_EQ(GroupPriority(std::vector<Sample>{a, b}), 2.0);    // (1 + 3) / 2.
  EXPECT_DOUBLE_EQ(GroupPriority(std::vector<Sample>{c, d}), 0.375);  // (0.75 + 0) / 2.
  EXPECT_DOUBLE_EQ(GroupPriority({}), 0.0);
}

TEST(DataflowReplayTest, SerializationRoundTrip) {
  ReplayOptions o;
  o.capacity = 4;
  ReplayMemory m = MakeMemory(o);
  m.Add(7, 0.5);
  m.Add(9, 1.25);
  std::mt19937_64 rng(3);
  (void)m.Select(1, rng);  // 9 reused once.
  ReplayMemory r = MakeMemory(o);
  ASSERT_TRUE(r.Deserialize(nlohmann::json::parse(m.Serialize().dump())).ok());
  EXPECT_EQ(r.Serialize(), m.Serialize());
  EXPECT_EQ(r.entries()[1].reuse_count, 1);

  o.capacity = 1;  // A smaller memory keeps the newest.
  ReplayMemory small = MakeMemory(o);
  ASSERT_TRUE(small.Deserialize(m.Serialize()).ok());
  ASSERT_EQ(small.size(), 1U);
  EXPECT_EQ(small.entries()[0].group_id, 9U);

  EXPECT_EQ(r.Deserialize(nlohmann::json{{"entries", {{{"groupId", -1}}}}}).field(),
            "state.entries[0].groupId");
  EXPECT_EQ(r.Deserialize(nlohmann::json::object()).field(), "state.entries");
  EXPECT_EQ(r.size(), 2U);  // Unchanged.
}

TEST(DataflowReplayTest, BadOptions) {
  struct Case {
    ReplayOptions options;
    const char* field;
  };
  ReplayOptions ratio;
  ratio.replay_ratio = 0.96;
  ReplayOptions capacity;
  capacity.capacity = 0;
  ReplayOptions alpha;
  alpha.alpha = -1;
  ReplayOptions epsilon;
  epsilon.epsilon = 0;
  const Case cases[] = {{ratio, "replayRatio"},
                        {capacity, "replayCapacity"},
                        {alpha, "replayAlpha"},
                        {epsilon, "replayEpsilon"}};
  for (const Case& c : cases) {
    EXPECT_EQ(ReplayMemory::Create(c.options).status().field(), c.field);
  }
  EXPECT_EQ(ParseReplaySelector("prioritized").value(), ReplaySelector::kPrioritized);
  EXPECT_EQ(ParseReplaySelector("random").status().field(), "replaySelector");
}

}  // namespace
}  // namespace sluice::dataflow
