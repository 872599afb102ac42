#include "operator/placement/scale_down.h"

#include <gtest/gtest.h>

namespace sluice::placement {
namespace {

ReplicaFacts Ready(const std::string& region, int index, int64_t in_flight) {
  ReplicaFacts r;
  r.name = "pool-" + region + "-" + std::to_string(index);
  r.region = region;
  r.replica_index = index;
  r.ready = true;
  r.in_flight = in_flight;
  return r;
}

ReplicaFacts NotReady(const std::string& region, int index) {
  ReplicaFacts r = Ready(region, index, -1);
  r.ready = false;
  return r;
}

ReplicaFacts Pending(const std::string& region, int index, bool unschedulable) {
  ReplicaFacts r = NotReady(region, index);
  r.pending_since_seconds = 100;
  r.pending_unschedulable = unschedulable;
  return r;
}

ReplicaFacts Draining(ReplicaFacts r) {
  r.draining = true;
  return r;
}

using Names = std::vector<std::string>;
using Creates = std::vector<std::pair<std::string, int>>;

TEST(ChooseReplicasToRemove, NothingWhenAtOrUnderTarget) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 3), Ready("a", 1, 0)};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 2}}), Names{});
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 5}}), Names{});
}

TEST(ChooseReplicasToRemove, NonReadyFirstPendingBeforeFailed) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0), NotReady("a", 1), Pending("a", 2, false),
                                  Pending("a", 3, true), Ready("a", 4, 0)};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 4}}), Names{"pool-a-3"});
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 3}}), (Names{"pool-a-3", "pool-a-2"}));
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 2}}), (Names{"pool-a-3", "pool-a-2", "pool-a-1"}));
  // Then Ready ones, highest index first on equal load.
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 1}}),
            (Names{"pool-a-3", "pool-a-2", "pool-a-1", "pool-a-4"}));
}

TEST(ChooseReplicasToRemove, ReadyLeastLoadedFirstUnknownLast) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 7), Ready("a", 1, -1), Ready("a", 2, 2),
                                  Ready("a", 3, 0), Ready("a", 4, 100)};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 4}}), Names{"pool-a-3"});
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 2}}), (Names{"pool-a-3", "pool-a-2", "pool-a-0"}));
  // A replica that does not answer goes after even the busiest known one.
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 0}}),
            (Names{"pool-a-3", "pool-a-2", "pool-a-0", "pool-a-4", "pool-a-1"}));
}

TEST(ChooseReplicasToRemove, TiesGoToHighestIndex) {
  std::vector<ReplicaFacts> rs = {Ready("a", 2, 1), Ready("a", 10, 1), Ready("a", 5, 1),
                                  Ready("a", 0, 1)};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 2}}), (Names{"pool-a-10", "pool-a-5"}));
  std::vector<ReplicaFacts> unknown = {Ready("a", 1, -1), Ready("a", 3, -1)};
  EXPECT_EQ(ChooseReplicasToRemove(unknown, {{"a", 1}}), Names{"pool-a-3"});
  std::vector<ReplicaFacts> pending = {Pending("a", 1, true), Pending("a", 4, true)};
  EXPECT_EQ(ChooseReplicasToRemove(pending, {{"a", 1}}), Names{"pool-a-4"});
}

TEST(ChooseReplicasToRemove, DrainingCountsAsLeaving) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 5), Ready("a", 1, 0), Draining(Ready("a", 2, 9)),
                                  Ready("a", 3, 3)};
  // Target 2: three stay, one more leaves (the least loaded), not the draining one again.
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 2}}), Names{"pool-a-1"});
  // Target 3: the draining one already covers the excess.
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 3}}), Names{});
  // Draining non-ready replicas are not picked either.
  std::vector<ReplicaFacts> d = {Draining(Pending("a", 0, true)), Ready("a", 1, 0)};
  EXPECT_EQ(ChooseReplicasToRemove(d, {{"a", 0}}), Names{"pool-a-1"});
}

TEST(ChooseReplicasToRemove, RegionsLeftTheSpecAllLeaveFirst) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0),  Ready("z", 0, 0),
                                  Ready("z", 1, -1), Pending("y", 0, false),
                                  Ready("a", 1, 4),  Draining(Ready("y", 1, 0))};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", 1}}),
            (Names{"pool-y-0", "pool-z-0", "pool-z-1", "pool-a-0"}));
  EXPECT_EQ(ChooseReplicasToRemove(rs, {}),
            (Names{"pool-a-0", "pool-a-1", "pool-y-0", "pool-z-0", "pool-z-1"}));
}

TEST(ChooseReplicasToRemove, SeveralRegionsInTargetOrder) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 1), Ready("a", 1, 2), Ready("b", 0, 1),
                                  Ready("b", 1, 0), Ready("b", 2, 0)};
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"b", 1}, {"a", 1}}),
            (Names{"pool-b-2", "pool-b-1", "pool-a-0"}));
  // A region with a target but no replicas is fine; a negative target counts as 0.
  EXPECT_EQ(ChooseReplicasToRemove(rs, {{"a", -1}, {"b", 3}, {"c", 2}}),
            (Names{"pool-a-0", "pool-a-1"}));
}

TEST(ReplicasToCreate, FillsLowestFreeIndices) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0), Ready("a", 2, 0), Ready("a", 5, 0)};
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 3}}), Creates{});
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 4}}), (Creates{{"a", 1}}));
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 6}}), (Creates{{"a", 1}, {"a", 3}, {"a", 4}}));
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 7}}), (Creates{{"a", 1}, {"a", 3}, {"a", 4}, {"a", 6}}));
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 1}}), Creates{});  // Over target: nothing to create.
}

TEST(ReplicasToCreate, EmptyRegionsStartAtZeroInTargetOrder) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0)};
  EXPECT_EQ(ReplicasToCreate(rs, {{"b", 2}, {"a", 2}, {"c", 0}}),
            (Creates{{"b", 0}, {"b", 1}, {"a", 1}}));
  EXPECT_EQ(ReplicasToCreate({}, {{"a", 3}}), (Creates{{"a", 0}, {"a", 1}, {"a", 2}}));
}

TEST(ReplicasToCreate, DrainingDoesNotCountButKeepsItsIndex) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0), Draining(Ready("a", 1, 0))};
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 2}}), (Creates{{"a", 2}}));
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 1}}), Creates{});
}

TEST(ReplicasToCreate, IndicesArePerRegion) {
  std::vector<ReplicaFacts> rs = {Ready("a", 0, 0), Ready("b", 1, 0), Pending("b", 0, true)};
  // Non-ready replicas count as present; region b has indices 0 and 1 in use.
  EXPECT_EQ(ReplicasToCreate(rs, {{"a", 2}, {"b", 3}}), (Creates{{"a", 1}, {"b", 2}}));
}

}  // namespace
}  // namespace sluice::placement
