#include "workers/dataflow/algorithms/splitting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {
namespace {

// Tokens: 2 prompt, 2 by alice (v3), 1 environment, 2 by bob (v7), 1 by alice (v4).
Sample TwoPolicyTrajectory() {
  Sample s;
  s.task_id = "t1";
  s.prompt_id = "p1";
  s.tokens = {10, 11, 20, 21, 30, 40, 41, 22};
  s.token_owner = {-1, -1, 0, 0, -1, 1, 1, 0};
  s.loss_mask = {0, 0, 1, 1, 0, 1, 1, 1};
  s.behaviour_logprobs = {0, 0, -0.5F, -0.25F, 0, -1.0F, -2.0F, -0.125F};
  s.versions = {-1, -1, 3, 3, -1, 7, 7, 4};
  s.policies = {"alice", "bob"};
  s.policy_rewards = {1.0, -1.0};
  return s;
}

TEST(DataflowSampleTest, MinVersionAndGeneratedTokens) {
  struct Case {
    std::vector<int64_t> versions;
    std::vector<uint8_t> mask;
    int64_t min_version;
    int64_t max_version;
    int64_t generated;
  };
  const Case cases[] = {
      {{}, {}, kNoVersion, kNoVersion, 0},            // Empty sample.
      {{-1, -1}, {0, 0}, kNoVersion, kNoVersion, 0},  // Prompt only.
      {{-1, -1, 0, 3, 2}, {0, 0, 1, 1, 1}, 0, 3, 3},  // Version 0 counts.
      {{-1, 5, -1, 4}, {0, 1, 0, 1}, 4, 5, 2},        // Env token between.
  };
  for (const Case& c : cases) {
    Sample s;
    s.versions = c.versions;
    s.loss_mask = c.mask;
    EXPECT_EQ(s.MinVersion(), c.min_version);
    EXPECT_EQ(s.MaxVersion(), c.max_version);
    EXPECT_EQ(s.GeneratedTokens(), c.generated);
  }
}

TEST(DataflowSplittingTest, NarrowsMaskVersionsAndRewardPerPolicy) {
  auto split = SplitByPolicy(TwoPolicyTrajectory());
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->size(), 2U);
  const Sample& alice = (*split)[0];
  EXPECT_EQ(alice.policy, "alice");
  EXPECT_EQ(alice.reward, 1.0);
  EXPECT_EQ(alice.loss_mask, (std::vector<uint8_t>{0, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(alice.versions, (std::vector<int64_t>{-1, -1, 3, 3, -1, -1, -1, 4}));
  EXPECT_EQ(alice.behaviour_logprobs, (std::vector<float>{0, 0, -0.5F, -0.25F, 0, 0, 0, -0.125F}));
  EXPECT_EQ(alice.MinVersion(), 3);  // min(3, 3, 4); bob's 7s are not alice's.
  EXPECT_EQ(alice.GeneratedTokens(), 3);
  EXPECT_EQ(alice.tokens, TwoPolicyTrajectory().tokens);  // Token ids untouched.
  const Sample& bob = (*split)[1];
  EXPECT_EQ(bob.policy, "bob");
  EXPECT_EQ(bob.reward, -1.0);
  EXPECT_EQ(bob.loss_mask, (std::vector<uint8_t>{0, 0, 0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(bob.MinVersion(), 7);
  EXPECT_EQ(bob.GeneratedTokens(), 2);
}

TEST(DataflowSplittingTest, PolicyWithoutTokensGetsNoSample) {
  Sample s = TwoPolicyTrajectory();
  s.policies.push_back("carol");
  s.policy_rewards.push_back(0.5);
  auto split = SplitByPolicy(s);
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->size(), 2U);
  EXPECT_EQ((*split)[1].policy, "bob");
}

TEST(DataflowSplittingTest, SinglePolicyTrajectory) {
  Sample s;
  s.tokens = {1, 2, 3};
  s.loss_mask = {0, 1, 1};
  s.behaviour_logprobs = {0, -1, -1};
  s.versions = {-1, 2, 2};
  s.policies = {"solo"};
  s.policy_rewards = {0.75};
  auto split = SplitByPolicy(s);
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->size(), 1U);
  EXPECT_EQ((*split)[0].policy, "solo");
  EXPECT_EQ((*split)[0].reward, 0.75);
  EXPECT_EQ((*split)[0].loss_mask, s.loss_mask);
}

TEST(DataflowSplittingTest, RejectsInconsistentTrajectories) {
  struct Case {
    const char* name;
    void (*mutate)(Sample&);
    const char* field;
  };
  const Case cases[] = {
      {"owner out of range", [](Sample& s) { s.token_owner[2] = 2; }, "token_owner"},
      {"short mask", [](Sample& s) { s.loss_mask.pop_back(); }, "loss_mask"},
      {"short versions", [](Sample& s) { s.versions.pop_back(); }, "versions"},
      {"short owners", [](Sample& s) { s.token_owner.pop_back(); }, "token_owner"},
      {"rewards vs policies", [](Sample& s) { s.policy_rewards.pop_back(); }, "policy_rewards"},
      {"NaN reward",
       [](Sample& s) { s.policy_rewards[1] = std::numeric_limits<double>::quiet_NaN(); },
       "policy_rewards"},
      {"no owners, two policies", [](Sample& s) { s.token_owner.clear(); }, "token_owner"},
  };
  for (const Case& c : cases) {
    Sample s = TwoPolicyTrajectory();
    c.mutate(s);
    auto split = SplitByPolicy(s);
    ASSERT_FALSE(split.ok()) << c.name;
    EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(split.status().field(), c.field) << c.name;
  }
}

}  // namespace
}  // namespace sluice::dataflow
