#include "workers/dataflow/algorithms/staleness.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::dataflow {
namespace {

// A sample whose generated tokens carry `versions` (one prompt token first).
Sample WithVersions(std::vector<int64_t> versions) {
  Sample s;
  s.versions = {kNoVersion};
  s.loss_mask = {0};
  for (int64_t v : versions) {
    s.versions.push_back(v);
    s.loss_mask.push_back(1);
  }
  return s;
}

TEST(DataflowStalenessTest, JudgeDrop) {
  struct Case {
    std::vector<int64_t> versions;
    int64_t current;
    bool keep;
    int64_t age;
    int64_t dropped_tokens;
  };
  StalenessOptions options;  // maxStaleness 4, drop.
  const Case cases[] = {
      {{6, 7}, 10, true, 4, 0},      // 10 − 6 = 4, not > 4.
      {{5, 9, 9}, 10, false, 5, 3},  // 10 − 5 = 5 > 4: dropped, 3 generated tokens reported.
      {{}, 10, true, 0, 0},          // No versions: never stale.
      {{0}, 4, true, 4, 0},          // Version 0 counts: 4 − 0 = 4.
      {{0}, 5, false, 5, 1},        {{10}, 10, true, 0, 0},
  };
  for (const Case& c : cases) {
    StalenessVerdict v = JudgeStaleness(WithVersions(c.versions), c.current, options);
    EXPECT_EQ(v.keep, c.keep);
    EXPECT_EQ(v.stale, !c.keep);
    EXPECT_EQ(v.age, c.age);
    EXPECT_EQ(v.dropped_tokens, c.dropped_tokens);
  }
}

TEST(DataflowStalenessTest, JudgeDownWeight) {
  StalenessOptions options;
  options.stale_action = StaleAction::kDownWeight;
  options.max_staleness = 2;
  options.down_weight_decay = 0.5;
  struct Case {
    int64_t min_version;
    double weight;
  };
  const Case cases[] = {
      {8, 1.0},    // age 2: fresh.
      {7, 0.5},    // age 3: 0.5^(3 − 2).
      {5, 0.125},  // age 5: 0.5^3.
  };
  for (const Case& c : cases) {
    StalenessVerdict v = JudgeStaleness(WithVersions({c.min_version}), 10, options);
    EXPECT_TRUE(v.keep);
    EXPECT_DOUBLE_EQ(v.weight, c.weight);
    EXPECT_EQ(v.dropped_tokens, 0);
  }
}

TEST(DataflowStalenessTest, ServingOrderEdfBreaksTiesByArrival) {
  // maxStaleness 2: deadlines 7, 5, 5, −∞, 6, 5.
  const std::vector<QueuedGroup> buffer = {
      {0, 5, 0}, {1, 3, 0}, {2, 3, 0}, {3, kNoVersion, 0},
      {4, 4, 0}, {0, 3, 0},  // Same deadline as 1 and 2 and the earliest arrival: before both.
  };
  EXPECT_EQ(ServingOrder(buffer, QueueOrder::kEdf, 2), (std::vector<size_t>{3, 5, 1, 2, 4, 0}));
  // FIFO: arrival only; equal arrivals (0 and 5) by position.
  EXPECT_EQ(ServingOrder(buffer, QueueOrder::kFifo, 2), (std::vector<size_t>{0, 5, 1, 2, 3, 4}));
}

// current 8, maxStaleness 2: stale iff 8 − v > 2, i.e. v < 6.
const std::vector<QueuedGroup> kBuffer = {
    {0, 7, 10}, {1, 5, 20}, {2, 6, 30}, {3, 4, 40}, {4, 7, 50},
};

TEST(DataflowStalenessTest, PickGroups) {
  struct Case {
    QueueOrder order;
    StaleAction action;
    size_t n;
    std::vector<size_t> picked;
    std::vector<size_t> stale;
    int64_t stale_tokens;
  };
  const Case cases[] = {
      // EDF order by deadline v + 2 = 9, 7, 8, 6, 9: 3, 1, 2, 0, 4. 3 and 1 are stale.
      {QueueOrder::kEdf, StaleAction::kDrop, 2, {2, 0}, {3, 1}, 60},
      // FIFO 0, 1, 2: 1 stale; 3 (stale, behind the picks) is not looked at.
      {QueueOrder::kFifo, StaleAction::kDrop, 2, {0, 2}, {1}, 20},
      // Asking for more than there is: all fresh ones, all stale ones.
      {QueueOrder::kEdf, StaleAction::kDrop, 10, {2, 0, 4}, {3, 1}, 60},
      {QueueOrder::kFifo, StaleAction::kDrop, 10, {0, 2, 4}, {1, 3}, 60},
      // Down-weight keeps stale groups, in serving order.
      {QueueOrder::kFifo, StaleAction::kDownWeight, 2, {0, 1}, {}, 0},
      {QueueOrder::kEdf, StaleAction::kDownWeight, 2, {3, 1}, {}, 0},
      {QueueOrder::kEdf, StaleAction::kDrop, 0, {}, {}, 0},
  };
  for (const Case& c : cases) {
    StalenessOptions options;
    options.max_staleness = 2;
    options.order = c.order;
    options.stale_action = c.action;
    PickResult r = PickGroups(kBuffer, c.n, 8, options);
    EXPECT_EQ(r.picked, c.picked);
    EXPECT_EQ(r.stale, c.stale);
    EXPECT_EQ(r.stale_tokens, c.stale_tokens);
  }
  EXPECT_TRUE(PickGroups({}, 4, 8, {}).picked.empty());
}

TEST(DataflowStalenessTest, EvictForCapacity) {
  EXPECT_EQ(EvictForCapacity(kBuffer, 3, QueueOrder::kEdf, 2), (std::vector<size_t>{3, 1}));
  EXPECT_EQ(EvictForCapacity(kBuffer, 3, QueueOrder::kFifo, 2), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(EvictForCapacity(kBuffer, 5, QueueOrder::kEdf, 2).empty());
}

// The oldest buffered data decides; groups without versions do not count.
TEST(DataflowStalenessTest, BufferLag) {
  EXPECT_EQ(BufferLag(kBuffer, 8), 4);  // The group at version 4.
  EXPECT_EQ(BufferLag({}, 8), 0);
  const std::vector<QueuedGroup> unversioned = {{0, kNoVersion, 10}, {1, 7, 10}};
  EXPECT_EQ(BufferLag(unversioned, 8), 1);
  EXPECT_EQ(BufferLag(std::vector<QueuedGroup>{{0, kNoVersion, 10}}, 8), 0);
  EXPECT_EQ(BufferLag(kBuffer, 3), 0) << "never negative";
}

TEST(DataflowStalenessTest, ParseAndValidate) {
  EXPECT_EQ(ParseStaleAction("drop").value(), StaleAction::kDrop);
  EXPECT_EQ(ParseStaleAction("down-weight").value(), StaleAction::kDownWeight);
  EXPECT_EQ(ParseStaleAction("Drop").status().field(), "staleAction");
  EXPECT_EQ(ParseQueueOrder("edf").value(), QueueOrder::kEdf);
  EXPECT_EQ(ParseQueueOrder("fifo").value(), QueueOrder::kFifo);
  EXPECT_EQ(ParseQueueOrder("lifo").status().field(), "order");
  StalenessOptions o;
  EXPECT_TRUE(ValidateStalenessOptions(o).ok());
  o.max_staleness = -1;
  EXPECT_EQ(ValidateStalenessOptions(o).field(), "maxStaleness");
  o = {};
  o.down_weight_decay = 0.0;
  EXPECT_EQ(ValidateStalenessOptions(o).field(), "downWeightDecay");
}

}  // namespace
}  // namespace sluice::dataflow
