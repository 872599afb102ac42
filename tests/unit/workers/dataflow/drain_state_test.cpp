#include "workers/dataflow/algorithms/drain_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::dataflow {
namespace {

// A policy at `version` with `usable` of `buffered` groups and batches of 2 fresh groups.
DrainPolicyInput P(const char* name, int64_t usable, int64_t buffered = -1, int64_t unacked = 0,
                   int64_t version = 0, bool announce_due = false) {
  DrainPolicyInput p;
  p.policy = name;
  p.version = version;
  p.announce_due = announce_due;
  p.unacked_batches = unacked;
  p.buffered_groups = buffered < 0 ? usable : buffered;
  p.usable_groups = usable;
  p.batch_groups = 2;
  p.fresh_needed = 2;
  return p;
}

DrainInput Exhausted(std::vector<DrainPolicyInput> policies, bool barrier = false) {
  DrainInput in;
  in.dataset_done = true;
  in.epochs = 3;
  in.version_barrier = barrier;
  in.policies = std::move(policies);
  return in;
}

std::vector<bool> Drained(const DrainState& s) {
  std::vector<bool> out;
  for (const PolicyDrain& p : s.policies) out.push_back(p.drained);
  return out;
}

TEST(DrainStateTest, ExhaustedNeedsTheCursorDoneAndNoTrainTaskInFlight) {
  struct Case {
    bool done;
    int64_t pending;
    int64_t leased;
    bool exhausted;
  };
  const Case cases[] = {
      {false, 0, 0, false},  // Prompts left.
      {true, 1, 0, false},   // A re-queued task will still produce a group.
      {true, 0, 1, false},   // So will a leased one.
      {true, 0, 0, true},
  };
  for (const Case& c : cases) {
    DrainInput in = Exhausted({P("actor", 0)});
    in.dataset_done = c.done;
    in.pending_train_tasks = c.pending;
    in.leased_train_tasks = c.leased;
    const DrainState s = DecideDrain(in);
    EXPECT_EQ(s.exhausted, c.exhausted) << c.done << c.pending << c.leased;
    // Nothing is drained before the data is exhausted, even with an empty buffer.
    EXPECT_EQ(s.policies.at(0).drained, c.exhausted);
  }
}

TEST(DrainStateTest, PolicyDecisions) {
  struct Case {
    const char* what;
    std::vector<DrainPolicyInput> policies;
    bool barrier;
    std::vector<bool> drained;
  };
  const std::vector<Case> cases = {
      {"enough for a batch", {P("a", 2)}, false, {false}},
      {"one group short", {P("a", 1)}, false, {true}},
      {"empty", {P("a", 0)}, false, {true}},
      {"an unacked batch may be served again", {P("a", 0, 0, 1)}, false, {false}},
      {"stale groups do not count", {P("a", 1, 5)}, false, {true}},
      {"each policy on its own", {P("a", 3), P("b", 1)}, false, {false, true}},
      // Barrier: a waits at version 2 for b, drained at 1 with nothing due: frozen.
      {"barrier on a drained policy", {P("a", 4, 4, 0, 2), P("b", 0, 0, 0, 1)}, true, {true, true}},
      {"no barrier", {P("a", 4, 4, 0, 2), P("b", 0, 0, 0, 1)}, false, {false, true}},
      // b's trainer acknowledged its last batch and will announce 2: a gets one more batch.
      {"announcement due", {P("a", 4, 4, 0, 2), P("b", 0, 0, 0, 1, true)}, true, {false, true}},
      {"not behind", {P("a", 4, 4, 0, 2), P("b", 0, 0, 0, 2)}, true, {false, true}},
      {"a batch in training", {P("a", 4, 4, 1, 2), P("b", 0, 0, 0, 1)}, true, {false, true}},
      // c is ahead of a (drained at the barrier) and so of b too.
      {"ahead of both",
       {P("a", 4, 4, 0, 2), P("b", 0, 0, 0, 1), P("c", 4, 4, 0, 3)},
       true,
       {true, true, true}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Drained(DecideDrain(Exhausted(c.policies, c.barrier))), c.drained) << c.what;
  }
}

TEST(DrainStateTest, ReasonsNameTheCountsAndTheBarrier) {
  DrainPolicyInput actor = P("actor", 3, 5);
  actor.batch_groups = 8;
  actor.fresh_needed = 6;
  DrainState s = DecideDrain(Exhausted({actor}));
  ASSERT_TRUE(s.policies[0].drained);
  EXPECT_EQ(s.policies[0].reason,
            "the 3 buffered groups (of 5; the others are stale) of policy actor cannot fill a "
            "batch of 8 (6 of them fresh)");
  EXPECT_EQ(DecideDrain(Exhausted({P("actor", 1)})).policies[0].reason,
            "the 1 buffered group of policy actor cannot fill a batch of 2");
  EXPECT_EQ(DrainedMessage(3, "x"), "the dataset is exhausted (epoch 3 of 3) and x");

  s = DecideDrain(Exhausted({P("solver", 4, 4, 0, 2), P("verifier", 0, 0, 0, 1)}, true));
  EXPECT_EQ(s.policies[0].reason,
            "policy solver waits at the version barrier (version 2) for policy verifier, which "
            "can no longer train (version 1)");
  EXPECT_TRUE(DecideDrain(Exhausted({P("a", 2)})).policies[0].reason.empty());
}

}  // namespace
}  // namespace sluice::dataflow
