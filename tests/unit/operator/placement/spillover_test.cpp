#include "operator/placement/spillover.h"

#include <gtest/gtest.h>

#include "operator/placement/region_targets.h"
#include "operator/placement/scale_down.h"
#include "tests/unit/operator/placement/replica_facts_builders.h"

namespace sluice::placement {
namespace {

using test_facts::ReadyReplica;
using test_facts::UnschedulableReplica;

using Names = std::vector<std::string>;
using Regions = std::set<std::string>;

TEST(BlockedRegions, TimingBoundaries) {
  std::vector<ReplicaFacts> rs = {ReadyReplica("a", 0), UnschedulableReplica("a", 1, 1000)};
  EXPECT_EQ(BlockedRegions(rs, 1299, 300), Regions{});
  EXPECT_EQ(BlockedRegions(rs, 1300, 300), Regions{"a"});  // Exactly spilloverAfterSeconds.
  EXPECT_EQ(BlockedRegions(rs, 5000, 300), Regions{"a"});
  EXPECT_EQ(ReplicasToSpill(rs, 1299, 300), Names{});
  EXPECT_EQ(ReplicasToSpill(rs, 1300, 300), Names{"pool-a-1"});
}

TEST(BlockedRegions, ZeroDelayBlocksAtOnceButNotBeforeThePodExists) {
  std::vector<ReplicaFacts> rs = {UnschedulableReplica("a", 0, 1000)};
  EXPECT_EQ(BlockedRegions(rs, 1000, 0), Regions{"a"});
  EXPECT_EQ(BlockedRegions(rs, 999, 0), Regions{});  // pending_since in the future (skew).
}

TEST(BlockedRegions, NeedsUnschedulableAndAKnownTime) {
  ReplicaFacts pending = UnschedulableReplica("a", 0, 0);
  pending.pending_unschedulable = false;  // Pending, not refused by the scheduler.
  ReplicaFacts no_time = UnschedulableReplica("b", 0, 0);
  no_time.pending_since_seconds.reset();
  ReplicaFacts ready = UnschedulableReplica("c", 0, 0);
  ready.ready = true;  // Stale flag on a Ready Pod: never spilled.
  std::vector<ReplicaFacts> rs = {pending, no_time, ready};
  EXPECT_EQ(BlockedRegions(rs, 10000, 300), Regions{});
  EXPECT_EQ(ReplicasToSpill(rs, 10000, 300), Names{});
}

TEST(BlockedRegions, DrainingStillBlocksButIsNotSpilledAgain) {
  ReplicaFacts draining = UnschedulableReplica("a", 0, 0);
  draining.draining = true;
  std::vector<ReplicaFacts> rs = {draining};
  EXPECT_EQ(BlockedRegions(rs, 300, 300), Regions{"a"});
  EXPECT_EQ(ReplicasToSpill(rs, 300, 300), Names{});
}

TEST(BlockedRegions, SeveralRegionsAndSortedNames) {
  std::vector<ReplicaFacts> rs = {UnschedulableReplica("b", 3, 0), UnschedulableReplica("a", 2, 0),
                                  UnschedulableReplica("b", 1, 0),
                                  UnschedulableReplica("c", 0, 150), ReadyReplica("a", 0)};
  EXPECT_EQ(BlockedRegions(rs, 300, 100), (Regions{"a", "b", "c"}));
  EXPECT_EQ(BlockedRegions(rs, 300, 200), (Regions{"a", "b"}));
  EXPECT_EQ(ReplicasToSpill(rs, 300, 200), (Names{"pool-a-2", "pool-b-1", "pool-b-3"}));
}

TEST(PlacedPerRegion, CountsScheduledNonDrainingReplicas) {
  ReplicaFacts starting = ReadyReplica("a", 2);
  starting.ready = false;
  starting.pending_since_seconds = 5;  // Pending, not (yet) refused: counts as placed.
  ReplicaFacts draining = ReadyReplica("a", 3);
  draining.draining = true;
  std::vector<ReplicaFacts> rs = {ReadyReplica("a", 0), UnschedulableReplica("a", 1, 0), starting,
                                  draining, UnschedulableReplica("b", 0, 0)};
  EXPECT_EQ(PlacedPerRegion(rs), (std::map<std::string, int64_t>{{"a", 2}}));
  EXPECT_EQ(RunningInBlocked(rs, {"a", "b"}), (std::map<std::string, int64_t>{{"a", 2}, {"b", 0}}));
  EXPECT_EQ(RunningInBlocked(rs, {}), (std::map<std::string, int64_t>{}));
}

// The whole spill-over cycle with strategy Priority: a replica stuck in the preferred region is
// replaced in the next one, and the replacement stays after the preferred region unblocks.
TEST(SpilloverCycle, SpillsToNextRegionAndDoesNotDriftBack) {
  api::RolloutPoolSpecPlacement placement;
  placement.strategy = "Priority";
  placement.spillover_after_seconds = 300;
  for (auto [name, priority] : {std::pair{"east", 10}, std::pair{"west", 5}}) {
    api::RolloutPoolSpecPlacementRegion r;
    r.name = name;
    r.priority = priority;
    placement.regions.push_back(r);
  }
  std::vector<ReplicaFacts> rs = {ReadyReplica("east", 0), ReadyReplica("east", 1),
                                  UnschedulableReplica("east", 2, 1000)};

  // Before the deadline: nothing blocked, the plan keeps all three in east.
  auto blocked = BlockedRegions(rs, 1200, 300);
  auto plan =
      DesiredPerRegionSticky(placement, 3, RunningInBlocked(rs, blocked), PlacedPerRegion(rs));
  EXPECT_EQ(plan, (PlacementPlan{{{"east", 3}, {"west", 0}}, 0}));
  EXPECT_TRUE(ChooseReplicasToRemove(rs, plan.targets).empty());
  EXPECT_TRUE(ReplicasToCreate(rs, plan.targets).empty());

  // After it: east is blocked at its 2 running replicas, the stuck one moves to west.
  blocked = BlockedRegions(rs, 1300, 300);
  EXPECT_EQ(blocked, Regions{"east"});
  plan = DesiredPerRegionSticky(placement, 3, RunningInBlocked(rs, blocked), PlacedPerRegion(rs));
  EXPECT_EQ(plan, (PlacementPlan{{{"east", 2}, {"west", 1}}, 0}));
  EXPECT_EQ(ReplicasToSpill(rs, 1300, 300), Names{"pool-east-2"});
  EXPECT_EQ(ChooseReplicasToRemove(rs, plan.targets), Names{"pool-east-2"});
  EXPECT_EQ(ReplicasToCreate(rs, plan.targets),
            (std::vector<std::pair<std::string, int>>{{"west", 0}}));

  // Next reconcile: the stuck Pod is gone, west-0 is starting; east no longer blocked. The
  // sticky plan leaves west-0 where it is (the ideal plan would move it back to east).
  rs = {ReadyReplica("east", 0), ReadyReplica("east", 1), ReadyReplica("west", 0)};
  rs[2].ready = false;
  rs[2].pending_since_seconds = 1301;
  blocked = BlockedRegions(rs, 1310, 300);
  EXPECT_TRUE(blocked.empty());
  plan = DesiredPerRegionSticky(placement, 3, RunningInBlocked(rs, blocked), PlacedPerRegion(rs));
  EXPECT_EQ(plan, (PlacementPlan{{{"east", 2}, {"west", 1}}, 0}));
  EXPECT_EQ(DesiredPerRegion(placement, 3, {}), (PlacementPlan{{{"east", 3}, {"west", 0}}, 0}));
  EXPECT_TRUE(ChooseReplicasToRemove(rs, plan.targets).empty());
  EXPECT_TRUE(ReplicasToCreate(rs, plan.targets).empty());

  // Scale-up refills east first; scale-down empties west first.
  plan = DesiredPerRegionSticky(placement, 4, {}, PlacedPerRegion(rs));
  EXPECT_EQ(ReplicasToCreate(rs, plan.targets),
            (std::vector<std::pair<std::string, int>>{{"east", 2}}));
  plan = DesiredPerRegionSticky(placement, 2, {}, PlacedPerRegion(rs));
  EXPECT_EQ(ChooseReplicasToRemove(rs, plan.targets), Names{"pool-west-0"});
}

}  // namespace
}  // namespace sluice::placement
