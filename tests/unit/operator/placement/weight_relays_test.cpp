#include "operator/placement/weight_relays.h"

#include <gtest/gtest.h>

namespace sluice::placement {
namespace {

RelayCandidate R(std::string name, std::string region, int index, bool ready = true,
                 bool draining = false) {
  return {name, region, index, ready, draining, "http://" + name + ":8080"};
}

TEST(WeightRelaysTest, LowestReadyIndexPerRegionRelaysForItsPeers) {
  const auto out = AssignWeightRelays({R("a-2", "us", 2), R("a-0", "us", 0, false),
                                       R("a-1", "us", 1), R("b-0", "eu", 0), R("b-3", "eu", 3)},
                                      /*regional=*/true);
  EXPECT_EQ(out.size(), 5u);
  EXPECT_EQ(out.at("a-1"), "");
  EXPECT_EQ(out.at("a-2"), "http://a-1:8080");
  EXPECT_EQ(out.at("a-0"), "http://a-1:8080");  // Joining: loads from the region's relay.
  EXPECT_EQ(out.at("b-0"), "");
  EXPECT_EQ(out.at("b-3"), "http://b-0:8080");
}

TEST(WeightRelaysTest, DrainingReplicasHandTheRoleOnAndGetNone) {
  const auto out =
      AssignWeightRelays({R("a-0", "us", 0, true, true), R("a-1", "us", 1)}, /*regional=*/true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("a-1"), "");
}

TEST(WeightRelaysTest, AJoinerWithoutAReadyPeerInItsRegionIsNotListed) {
  const auto out = AssignWeightRelays({R("a-0", "us", 0, false), R("b-0", "eu", 0)},
                                      /*regional=*/true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("b-0"), "");
}

// Without placement the ready replicas fetch from the trainer, and a joiner loads from the
// lowest ready peer: after the job finished no trainer serves the final version.
TEST(WeightRelaysTest, WithoutPlacementOnlyJoinersLoadFromAPeer) {
  const auto out = AssignWeightRelays(
      {R("c-0", "", 0, true, true), R("c-2", "", 2), R("c-1", "", 1), R("c-3", "", 3, false)},
      /*regional=*/false);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.at("c-1"), "");
  EXPECT_EQ(out.at("c-2"), "");
  EXPECT_EQ(out.at("c-3"), "http://c-1:8080");
}

TEST(WeightRelaysTest, ReplicasWithoutAnAddressAreNeitherRelaysNorListed) {
  RelayCandidate pending = R("c-0", "", 0, false);
  pending.url = "";
  RelayCandidate no_ip_ready = R("c-1", "", 1);
  no_ip_ready.url = "";
  const auto out = AssignWeightRelays({pending, no_ip_ready, R("c-2", "", 2, false)},
                                      /*regional=*/false);
  EXPECT_TRUE(out.empty());  // c-2 joins with no ready peer: the trainer serves it.
}

}  // namespace
}  // namespace sluice::placement
