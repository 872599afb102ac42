// Wire encoding of submitted trajectory groups and served batches.
#include "workers/dataflow/trajectory_codec.h"

#include <gtest/gtest.h>

#include "common/wire/frame.h"

namespace sluice::dataflow {
namespace {

Sample MakeSample(int n, const std::string& policy, double reward) {
  Sample s;
  s.prompt_id = "arith-7";
  s.policy = policy;
  for (int i = 0; i < n; ++i) {
    s.tokens.push_back(100 + i);
    s.loss_mask.push_back(i >= 2 ? 1 : 0);
    s.behaviour_logprobs.push_back(i >= 2 ? -0.25f * static_cast<float>(i) : 0.0f);
    s.versions.push_back(i >= 2 ? 3 : kNoVersion);
  }
  s.reward = reward;
  s.finish_reason = "stop";
  s.turn_starts = {2};
  s.generation_seconds = 0.5;
  return s;
}

TEST(TrajectoryCodecTest, GroupRoundTrips) {
  TrajectoryGroup g;
  g.task_id = "task-1";
  g.attempt = 2;
  g.lease_id = "lease-9";
  g.worker_id = "rollout-us-0";
  g.prompt_id = "arith-7";
  g.samples = {MakeSample(5, "p", 1.0), MakeSample(3, "p", 0.0)};
  Sample multi = MakeSample(4, "", 0.0);
  multi.policies = {"solver", "verifier"};
  multi.policy_rewards = {1.0, -1.0};
  multi.token_owner = {kNoOwner, kNoOwner, 0, 1};
  g.samples.push_back(multi);
  std::string body;
  ASSERT_TRUE(EncodeTrajectoryGroup(g, &body).ok());
  Result<TrajectoryGroup> back = DecodeTrajectoryGroup(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task_id, "task-1");
  EXPECT_EQ(back->attempt, 2u);
  EXPECT_EQ(back->worker_id, "rollout-us-0");
  ASSERT_EQ(back->samples.size(), 3u);
  EXPECT_EQ(back->samples[0].tokens, g.samples[0].tokens);
  EXPECT_EQ(back->samples[0].behaviour_logprobs, g.samples[0].behaviour_logprobs);
  EXPECT_EQ(back->samples[0].versions, g.samples[0].versions);
  EXPECT_EQ(back->samples[0].task_id, "task-1");
  EXPECT_EQ(back->samples[1].reward, 0.0);
  EXPECT_EQ(back->samples[2].policies, multi.policies);
  EXPECT_EQ(back->samples[2].token_owner, multi.token_owner);
  EXPECT_EQ(back->samples[2].policy_rewards, multi.policy_rewards);
  EXPECT_EQ(back->samples[0].turn_starts, std::vector<uint32_t>{2});
  EXPECT_DOUBLE_EQ(back->samples[0].generation_seconds, 0.5);
}

TEST(TrajectoryCodecTest, GroupRejectsDamageAndInconsistency) {
  TrajectoryGroup g;
  g.task_id = "t";
  g.samples = {MakeSample(4, "p", 1.0)};
  std::string body;
  ASSERT_TRUE(EncodeTrajectoryGroup(g, &body).ok());
  std::string flipped = body;
  flipped[30] ^= 0x40;
  EXPECT_EQ(DecodeTrajectoryGroup(flipped).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(DecodeTrajectoryGroup(body.substr(0, body.size() - 3)).ok());
  EXPECT_FALSE(DecodeTrajectoryGroup(body + body).ok());  // One frame only.

  TrajectoryGroup bad = g;
  bad.samples[0].loss_mask.pop_back();  // Not parallel to tokens.
  std::string bad_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(bad, &bad_body).ok());
  Status s = DecodeTrajectoryGroup(bad_body).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "samples[0].loss_mask");

  TrajectoryGroup turns = g;
  turns.samples[0].turn_starts = {9};
  std::string turns_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(turns, &turns_body).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(turns_body).status().field(), "samples[0].turn_starts");

  TrajectoryGroup empty = g;
  empty.samples.clear();
  std::string empty_body;
  ASSERT_TRUE(EncodeTrajectoryGroup(empty, &empty_body).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(empty_body).status().field(), "samples");

  // A frame of another type is refused by type.
  std::string other;
  ASSERT_TRUE(wire::AppendFrame(kBatchFrame, "x", &other).ok());
  EXPECT_EQ(DecodeTrajectoryGroup(other).status().field(), "frame.type");
}

TEST(TrajectoryCodecTest, BatchPacksWithoutPaddingAndRoundTrips) {
  Batch b;
  b.batch_id = "b-1";
  b.policy = "p";
  b.policy_version = 7;
  b.samples = {MakeSample(5, "p", 1.0), MakeSample(2, "p", 0.0), MakeSample(3, "p", 0.5)};
  b.samples[0].group_mean = 0.5;
  b.samples[0].group_std = 0.7;
  b.samples[0].advantage = 0.71;
  b.samples[2].loss_weight = 0.5;
  b.samples[1].task_id = "task-2";
  b.group_index = {0, 0, 1};
  b.replayed = {0, 0, 1};
  b.stats = {{"buffered", 12}};
  std::string body;
  ASSERT_TRUE(EncodeBatch(b, &body).ok());
  // Packed: the body grows by exactly the per-token bytes (4 + 1 + 4 + 8) of a longer sample,
  // never by padding other samples to the longest.
  Batch longer = b;
  longer.samples[1] = MakeSample(3, "p", 0.0);
  longer.samples[1].task_id = "task-2";
  std::string longer_body;
  ASSERT_TRUE(EncodeBatch(longer, &longer_body).ok());
  EXPECT_EQ(longer_body.size(), body.size() + 17u);
  Result<Batch> back = DecodeBatch(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->batch_id, "b-1");
  EXPECT_EQ(back->policy_version, 7);
  ASSERT_EQ(back->samples.size(), 3u);
  EXPECT_EQ(back->samples[1].tokens, b.samples[1].tokens);
  EXPECT_EQ(back->samples[2].loss_mask, b.samples[2].loss_mask);
  EXPECT_EQ(back->samples[0].advantage, 0.71);
  EXPECT_FALSE(back->samples[1].advantage.has_value());
  EXPECT_EQ(back->samples[0].group_std, 0.7);
  EXPECT_EQ(back->samples[2].loss_weight, 0.5);
  EXPECT_EQ(back->samples[1].task_id, "task-2");
  EXPECT_EQ(back->group_index, b.group_index);
  EXPECT_EQ(back->replayed, b.replayed);
  EXPECT_EQ(back->stats["buffered"], 12);

  Batch mismatched = b;
  mismatched.group_index.pop_back();
  std::string out;
  EXPECT_FALSE(EncodeBatch(mismatched, &out).ok());
  EXPECT_FALSE(DecodeBatch(body.substr(0, 50)).ok());
}

}  // namespace
}  // namespace sluice::dataflow
