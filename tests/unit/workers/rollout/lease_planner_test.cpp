#include "workers/rollout/lease_planner.h"

#include <gtest/gtest.h>

namespace sluice::rollout {
namespace {

TEST(TasksToLeaseTest, FillsFreeEpisodeAndSequenceSlots) {
  CapacityInputs in;
  in.max_episodes = 8;
  in.max_sequences = 64;
  in.samples_per_task = 8;
  EXPECT_EQ(TasksToLease(in), 8);
  in.episodes_in_flight = 6;
  in.sequences_in_flight = 48;
  EXPECT_EQ(TasksToLease(in), 2);  // 16 free sequences, 2 tasks of 8.
  in.sequences_in_flight = 60;
  EXPECT_EQ(TasksToLease(in), 0);  // 4 free sequences cannot hold a task of 8.
}

TEST(TasksToLeaseTest, NothingWhileDrainingFullOrAboveTheKvWatermark) {
  CapacityInputs in;
  in.max_episodes = 4;
  in.draining = true;
  EXPECT_EQ(TasksToLease(in), 0);
  in.draining = false;
  in.kv_usage = 0.97;
  EXPECT_EQ(TasksToLease(in), 0);
  in.kv_usage = 0.5;
  in.episodes_in_flight = 4;
  EXPECT_EQ(TasksToLease(in), 0);
}

TEST(TasksToLeaseTest, AGroupLargerThanTheEngineStillRunsWhenIdle) {
  CapacityInputs in;
  in.max_episodes = 4;
  in.max_sequences = 4;
  in.samples_per_task = 16;
  EXPECT_EQ(TasksToLease(in), 1);
  in.episodes_in_flight = 1;
  in.sequences_in_flight = 16;
  EXPECT_EQ(TasksToLease(in), 0);
}

TEST(ChooseRelayTest, LowestReadyIndexOrSelf) {
  EXPECT_EQ(ChooseRelay(3, {}), 3);
  EXPECT_EQ(ChooseRelay(3, {2, 0}), 0);
  EXPECT_EQ(ChooseRelay(0, {}), 0);
  EXPECT_EQ(ChooseRelay(2, {1}), 1);
}

TEST(ReplicaNameTest, IndexAndPeers) {
  EXPECT_EQ(ReplicaIndex("pool-us-east-12"), 12);
  EXPECT_EQ(ReplicaIndex("pool-3"), 3);
  EXPECT_FALSE(ReplicaIndex("pool").has_value());
  EXPECT_FALSE(ReplicaIndex("pool-x1").has_value());
  EXPECT_EQ(PeerPodName("pool-us-east-12", 0), "pool-us-east-0");
}

TEST(PoliciesBehindTest, OnlyHostedPoliciesWithANewerAnnouncementHoldBackReadiness) {
  const std::map<std::string, int64_t> held = {{"actor", 0}, {"critic", 2}, {"verifier", 0}};
  // Nothing announced: the initial weights (version 0) are current, ready at once.
  EXPECT_TRUE(PoliciesBehind({}, held).empty());
  // critic already holds 2; "other" is not hosted.
  EXPECT_EQ(PoliciesBehind({{"actor", 3}, {"critic", 2}, {"other", 9}}, held),
            (std::vector<std::string>{"actor"}));
  EXPECT_EQ(PoliciesBehind({{"verifier", 1}, {"critic", 3}, {"actor", 1}}, held),
            (std::vector<std::string>{"actor", "critic", "verifier"}));
  EXPECT_TRUE(PoliciesBehind({{"actor", 3}}, {{"actor", 3}}).empty());
  EXPECT_TRUE(PoliciesBehind({{"actor", 3}}, {}).empty());
}

TEST(SplitWeightUrlTest, BaseAndVersion) {
  Result<WeightUrl> u = SplitWeightUrl("http://10.0.0.5:8080/v1/weights/17");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->base, "http://10.0.0.5:8080");
  EXPECT_EQ(u->version, 17);
  for (const char* bad : {"", "http://h:1/v1/weights/", "http://h:1/v1/weights/x", "/v1/weights/3",
                          "http://h:1/v2/weights/3"}) {
    Result<WeightUrl> b = SplitWeightUrl(bad, "versions[0].url");
    EXPECT_FALSE(b.ok()) << bad;
    if (!b.ok()) {
      EXPECT_EQ(b.status().field(), "versions[0].url");
    }
  }
}

}  // namespace
}  // namespace sluice::rollout
