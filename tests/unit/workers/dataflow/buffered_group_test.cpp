#include "workers/dataflow/buffered_group.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::dataflow {
namespace {

BufferedGroup MakeGroup() {
  BufferedGroup g;
  g.group_id = 17;
  g.arrival = 42;
  g.task_id = "task-3";
  g.prompt_id = "p-1";
  for (int i = 0; i < 2; ++i) {
    Sample s;
    s.task_id = "task-3";
    s.prompt_id = "p-1";
    s.group_id = 17;
    s.policy = "solver";
    s.tokens = {1, 2, 3};
    s.loss_mask = {0, 1, 1};
    s.behaviour_logprobs = {0, -0.1f, -0.2f};
    s.versions = {-1, 4, 5};
    s.token_owner = {-1, 0, 0};
    s.policies = {"solver"};
    s.policy_rewards = {0.1 * i};
    s.reward = 0.1 * i;
    s.finish_reason = i == 0 ? "stop" : "length";
    s.turn_starts = {1};
    s.generation_seconds = 0.25;
    s.group_mean = 0.05;
    s.group_std = 0.07071067811865475;
    if (i == 1) s.advantage = 0.7071;
    s.loss_weight = i == 0 ? 1.0 : 0.125;
    g.samples.push_back(s);
  }
  return g;
}

TEST(BufferedGroupTest, RoundTripsThroughCborBitExactly) {
  const BufferedGroup g = MakeGroup();
  auto encoded = EncodeBufferedGroup(g);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(*encoded);
  auto decoded = DecodeBufferedGroup(nlohmann::json::from_cbor(cbor));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->group_id, 17U);
  EXPECT_EQ(decoded->arrival, 42U);
  EXPECT_EQ(decoded->task_id, "task-3");
  EXPECT_EQ(decoded->prompt_id, "p-1");
  ASSERT_EQ(decoded->samples.size(), 2U);
  for (size_t i = 0; i < 2; ++i) {
    const Sample& a = g.samples[i];
    const Sample& b = decoded->samples[i];
    EXPECT_EQ(b.task_id, a.task_id);
    EXPECT_EQ(b.group_id, a.group_id);
    EXPECT_EQ(b.policy, a.policy);
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.loss_mask, a.loss_mask);
    EXPECT_EQ(b.behaviour_logprobs, a.behaviour_logprobs);
    EXPECT_EQ(b.versions, a.versions);
    EXPECT_EQ(b.token_owner, a.token_owner);
    EXPECT_EQ(b.policies, a.policies);
    EXPECT_EQ(b.policy_rewards, a.policy_rewards);
    EXPECT_EQ(b.reward, a.reward);
    EXPECT_EQ(b.finish_reason, a.finish_reason);
    EXPECT_EQ(b.turn_starts, a.turn_starts);
    EXPECT_EQ(b.generation_seconds, a.generation_seconds);
    EXPECT_EQ(b.group_mean, a.group_mean);
    EXPECT_EQ(b.group_std, a.group_std);
    EXPECT_EQ(b.advantage, a.advantage);
    EXPECT_EQ(b.loss_weight, a.loss_weight);
  }
  const QueuedGroup q = decoded->Queued();
  EXPECT_EQ(q.arrival, 42U);
  EXPECT_EQ(q.min_version, 4);
  EXPECT_EQ(q.generated_tokens, 4);
}

TEST(BufferedGroupTest, RejectsMalformedEncodings) {
  auto encoded = EncodeBufferedGroup(MakeGroup());
  ASSERT_TRUE(encoded.ok());
  nlohmann::json bad = *encoded;
  bad["stamps"].erase(0);
  EXPECT_EQ(DecodeBufferedGroup(bad).status().code(), StatusCode::kCorruption);
  bad = *encoded;
  bad["samples"] = "text";
  EXPECT_EQ(DecodeBufferedGroup(bad).status().code(), StatusCode::kCorruption);
  bad = *encoded;
  bad["samples"] = nlohmann::json::binary({1, 2, 3});
  EXPECT_EQ(DecodeBufferedGroup(bad).status().code(), StatusCode::kCorruption);
  bad = *encoded;
  bad.erase("arrival");
  EXPECT_EQ(DecodeBufferedGroup(bad).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeBufferedGroup(nlohmann::json::array()).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice::dataflow
