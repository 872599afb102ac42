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
                                       R("a-1", "us", 1), R("b-0", "eu", 0), R("b-3", "eu", 3)});
  EXPECT_EQ(out.size(), 4u);  // a-0 is not ready.
  EXPECT_EQ(out.at("a-1"), "");
  EXPECT_EQ(out.at("a-2"), "http://a-1:8080");
  EXPECT_EQ(out.at("b-0"), "");
  EXPECT_EQ(out.at("b-3"), "http://b-0:8080");
}

TEST(WeightRelaysTest, DrainingReplicasAndPoolsWithoutRegionsGetNone) {
  const auto out = AssignWeightRelays(
      {R("a-0", "us", 0, true, true), R("a-1", "us", 1), R("c-0", "", 0), R("c-1", "", 1)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("a-1"), "");  // The draining a-0 hands the role on.
}

}  // namespace
}  // namespace sluice::placement
