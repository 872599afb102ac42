#include "operator/placement/capacity_refusals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "operator/placement/scale_down.h"
#include "tests/unit/operator/placement/replica_facts_builders.h"

namespace sluice::placement {
namespace {

api::RolloutPoolSpecPlacement Priority(const std::vector<std::pair<std::string, int64_t>>& regions,
                                       std::optional<int64_t> max_replicas = std::nullopt) {
  api::RolloutPoolSpecPlacement p;
  p.strategy = "Priority";
  for (const auto& [name, priority] : regions) {
    api::RolloutPoolSpecPlacementRegion r;
    r.name = name;
    r.weight = 1;
    r.priority = priority;
    r.max_replicas = max_replicas;
    p.regions.push_back(r);
  }
  return p;
}

using test_facts::ReadyReplica;
using test_facts::UnschedulableReplica;

using Names = std::vector<std::string>;

TEST(RememberRefusals, ARegionIsRememberedUntilThePoolIsWholeAndReady) {
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0),
                                  UnschedulableReplica("west", 1, 100, "west is full")};
  Refusals r = RememberRefusals({}, rs, 2, 110, 5);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.at("west"), (Refusal{110, "west is full", 1}));

  // The stuck replica moved to east, where it is not yet refused: west stays refused, since
  // the first time it was seen.
  rs = {ReadyReplica("west", 0), UnschedulableReplica("east", 0, 111, "east is full")};
  r = RememberRefusals(r, rs, 2, 112, 5);
  EXPECT_EQ(r, (Refusals{{"west", {110, "west is full", 1}}}));
  r = RememberRefusals(r, rs, 2, 116, 5);
  EXPECT_EQ(r, (Refusals{{"west", {110, "west is full", 1}}, {"east", {116, "east is full", 0}}}));

  // A freshly created replica (not yet Ready) keeps the memory, and so does a pool that sees
  // fewer replicas than it wants (its cache has not caught up with a spill yet).
  ReplicaFacts fresh = ReadyReplica("east", 1);
  fresh.ready = false;
  fresh.unscheduled = true;
  const Refusals kept = RememberRefusals(r, {ReadyReplica("west", 0), fresh}, 2, 120, 5);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept.at("east").placed, 1);  // Not refused yet: it counts as placed there.
  EXPECT_EQ(RememberRefusals(r, {ReadyReplica("west", 0)}, 2, 120, 5), r);

  // Every replica there and Ready: the crunch is over.
  EXPECT_EQ(RememberRefusals(r, {ReadyReplica("west", 0), ReadyReplica("east", 0)}, 2, 120, 5),
            Refusals{});
  // A draining replica does not count.
  ReplicaFacts leaving = UnschedulableReplica("east", 1, 100);
  leaving.draining = true;
  EXPECT_EQ(RememberRefusals(r, {ReadyReplica("west", 0), leaving}, 1, 120, 5), Refusals{});
  // The most replicas a refused region placed is kept when it loses one.
  r = RememberRefusals(
      {}, {ReadyReplica("west", 0), ReadyReplica("west", 1), UnschedulableReplica("west", 2, 100)},
      3, 200, 5);
  EXPECT_EQ(r.at("west").placed, 2);
  r = RememberRefusals(r, {ReadyReplica("west", 0), UnschedulableReplica("west", 2, 100)}, 3, 201,
                       5);
  EXPECT_EQ(r.at("west").placed, 2);
}

TEST(RememberRefusals, TheFirstStuckReplicaByNameGivesTheMessage) {
  std::vector<ReplicaFacts> rs = {UnschedulableReplica("west", 2, 100, "later"),
                                  UnschedulableReplica("west", 1, 100, "first"),
                                  UnschedulableReplica("west", 3, 100, "")};
  EXPECT_EQ(RememberRefusals({}, rs, 3, 200, 5).at("west").message, "first");
  // Not yet stuck long enough: nothing refused, nothing remembered.
  EXPECT_EQ(RememberRefusals({}, rs, 3, 102, 5), Refusals{});
}

TEST(PlanWithRefusals, SpillsStuckReplicasIntoARegionWithRoom) {
  const auto spec = Priority({{"west", 2}, {"east", 1}});
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0), UnschedulableReplica("west", 1, 100),
                                  UnschedulableReplica("west", 2, 100)};
  const Refusals refused = RememberRefusals({}, rs, 3, 200, 5);
  SpilloverPlan p = PlanWithRefusals(spec, 3, rs, refused);
  EXPECT_FALSE(p.settled);
  EXPECT_EQ(p.plan.targets, (std::vector<RegionTarget>{{"west", 1}, {"east", 2}}));
  EXPECT_EQ(p.plan.unplaced, 0);
  EXPECT_EQ(p.spill, (Names{"pool-west-1", "pool-west-2"}));
}

TEST(PlanWithRefusals, ReplicasRefusedASecondApartSpillTogether) {
  // The scheduler refused west-2 a second after west-1: once west is refused, both move (and are
  // both named), not one spilled and the other removed unannounced.
  const auto spec = Priority({{"west", 2}, {"east", 1}});
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0), UnschedulableReplica("west", 1, 100),
                                  UnschedulableReplica("west", 2, 101)};
  const Refusals refused = RememberRefusals({}, rs, 3, 105, 5);
  ASSERT_EQ(refused.size(), 1u);
  SpilloverPlan p = PlanWithRefusals(spec, 3, rs, refused);
  EXPECT_EQ(p.plan.targets, (std::vector<RegionTarget>{{"west", 1}, {"east", 2}}));
  EXPECT_EQ(p.spill, (Names{"pool-west-1", "pool-west-2"}));
}

TEST(PlanWithRefusals, SettlesWhenEveryRegionRefused) {
  const auto spec = Priority({{"west", 2}, {"east", 1}});
  // West ran one and refused two, which moved to east; east runs one and refuses the other.
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0), ReadyReplica("east", 0),
                                  UnschedulableReplica("east", 1, 100)};
  const Refusals refused = {{"west", {90, "w"}}, {"east", {105, "e"}}};
  SpilloverPlan p = PlanWithRefusals(spec, 3, rs, refused);
  EXPECT_TRUE(p.settled);
  EXPECT_EQ(p.plan.targets, (std::vector<RegionTarget>{{"west", 1}, {"east", 2}}));
  EXPECT_EQ(p.plan.unplaced, 0);
  EXPECT_EQ(p.spill, Names{});
  EXPECT_EQ(ChooseReplicasToRemove(rs, p.plan.targets), Names{});
  EXPECT_TRUE(ReplicasToCreate(rs, p.plan.targets).empty());
}

TEST(PlanWithRefusals, ParksOnlyWhatFitsNowhereAndSpillsTheRest) {
  // West (max 3) runs one and refuses two; east (max 1) is empty and has room for one.
  const auto spec = Priority({{"west", 2}, {"east", 1}}, 3);
  auto spec_east_one = spec;
  spec_east_one.regions[1].max_replicas = 1;
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0), UnschedulableReplica("west", 1, 100),
                                  UnschedulableReplica("west", 2, 100)};
  SpilloverPlan p = PlanWithRefusals(spec_east_one, 3, rs, {{"west", {100, ""}}});
  EXPECT_TRUE(p.settled);
  EXPECT_EQ(p.plan.targets, (std::vector<RegionTarget>{{"west", 2}, {"east", 1}}));
  EXPECT_EQ(p.plan.unplaced, 0);
  // The most expendable stuck replica (highest index) spills; the other waits in west.
  EXPECT_EQ(p.spill, Names{"pool-west-2"});
}

TEST(PlanWithRefusals, SpreadAndNoRefusalPlanAsBefore) {
  const auto spec = Priority({{"west", 2}, {"east", 1}});
  std::vector<ReplicaFacts> rs = {ReadyReplica("west", 0), UnschedulableReplica("west", 1, 100)};
  SpilloverPlan p = PlanWithRefusals(spec, 2, rs, {});
  EXPECT_FALSE(p.settled);
  EXPECT_EQ(p.plan, DesiredPerRegionSticky(spec, 2, {}, PlacedPerRegion(rs)));
  auto spread = spec;
  spread.strategy = "Spread";
  p = PlanWithRefusals(spread, 2, rs, {{"west", {100, ""}}});
  EXPECT_FALSE(p.settled);
  EXPECT_EQ(p.spill, Names{});
  EXPECT_EQ(p.plan, DesiredPerRegionSticky(spread, 2, {}, PlacedPerRegion(rs)));
}

// A pool reconciled against a simulated cluster: each region has a number of GPUs, a pod binds
// when its region has a free one and is refused otherwise. The controller's loop is the one in
// rolloutpool/reconciler.cpp: remember refusals, plan, delete what the plan removes, create
// what it adds.
class Cluster {
 public:
  Cluster(api::RolloutPoolSpecPlacement spec, std::map<std::string, int> gpus)
      : spec_(std::move(spec)), gpus_(std::move(gpus)) {}

  // One reconcile at `now` (seconds); returns the names deleted in it.
  Names Reconcile(int64_t now, int64_t replicas, int64_t spill_after) {
    Schedule();
    std::vector<ReplicaFacts> facts;
    for (const Pod& p : pods_) {
      ReplicaFacts f = ReadyReplica(p.region, p.index);
      f.ready = p.bound;
      f.unscheduled = !p.bound;
      f.pending_unschedulable = !p.bound && p.refused;
      f.pending_since_seconds = p.bound ? std::nullopt : std::optional<int64_t>(p.created);
      f.scheduler_message = f.pending_unschedulable ? p.region + " has no free GPU" : "";
      facts.push_back(f);
    }
    refusals_ = RememberRefusals(refusals_, facts, replicas, now, spill_after);
    last_ = PlanWithRefusals(spec_, replicas, facts, refusals_);
    const Names removed = ChooseReplicasToRemove(facts, last_.plan.targets);
    std::erase_if(pods_, [&](const Pod& p) {
      return std::find(removed.begin(), removed.end(), p.name()) != removed.end();
    });
    for (const auto& [region, index] : ReplicasToCreate(facts, last_.plan.targets)) {
      pods_.push_back({region, index, now});
    }
    return removed;
  }

  const SpilloverPlan& last() const { return last_; }
  const Refusals& refusals() const { return refusals_; }
  std::map<std::string, int> PodsPerRegion() const {
    std::map<std::string, int> out;
    for (const Pod& p : pods_) ++out[p.region];
    return out;
  }
  void AddGpus(const std::string& region, int n) { gpus_[region] += n; }
  // The replica's pod disappears (it crashed and was deleted, or its node failed).
  void Lose(const std::string& name) {
    std::erase_if(pods_, [&](const Pod& p) { return p.name() == name; });
  }

 private:
  struct Pod {
    std::string region;
    int index = 0;
    int64_t created = 0;
    bool bound = false;
    bool refused = false;
    std::string name() const { return "pool-" + region + "-" + std::to_string(index); }
  };

  void Schedule() {
    std::map<std::string, int> used;
    for (const Pod& p : pods_) used[p.region] += p.bound ? 1 : 0;
    for (Pod& p : pods_) {
      if (p.bound) continue;
      if (used[p.region] < gpus_[p.region]) {
        p.bound = true;
        ++used[p.region];
      } else {
        p.refused = true;
      }
    }
  }

  api::RolloutPoolSpecPlacement spec_;
  std::map<std::string, int> gpus_;
  std::vector<Pod> pods_;
  Refusals refusals_;
  SpilloverPlan last_;
};

TEST(PlanWithRefusals, APoolLargerThanTheClusterSettlesInsteadOfFlapping) {
  // West has one GPU, east two; the pool wants four. Reconciles every second, spill-over after 3.
  Cluster cluster(Priority({{"west", 2}, {"east", 1}}), {{"west", 1}, {"east", 2}});
  int deletions_after_settling = 0;
  int64_t settled_at = -1;
  for (int64_t now = 0; now < 120; ++now) {
    const Names removed = cluster.Reconcile(now, 4, 3);
    if (settled_at >= 0) deletions_after_settling += static_cast<int>(removed.size());
    if (settled_at < 0 && cluster.last().settled) settled_at = now;
  }
  ASSERT_GE(settled_at, 0) << "the pool never settled";
  EXPECT_LT(settled_at, 20);
  EXPECT_EQ(deletions_after_settling, 0);
  // Three run (one in west, two in east); the fourth waits where spill-over left it, in east.
  EXPECT_EQ(cluster.PodsPerRegion(), (std::map<std::string, int>{{"west", 1}, {"east", 3}}));
  EXPECT_EQ(cluster.refusals().size(), 2u);
  EXPECT_EQ(cluster.refusals().at("east").message, "east has no free GPU");
  EXPECT_TRUE(cluster.last().settled);

  // A GPU frees up in east: the waiting replica starts, the crunch is over and forgotten, and
  // nothing moves.
  cluster.AddGpus("east", 1);
  Names removed = cluster.Reconcile(120, 4, 3);
  EXPECT_EQ(removed, Names{});
  removed = cluster.Reconcile(121, 4, 3);
  EXPECT_EQ(removed, Names{});
  EXPECT_TRUE(cluster.refusals().empty());
  EXPECT_FALSE(cluster.last().settled);
  EXPECT_EQ(cluster.PodsPerRegion(), (std::map<std::string, int>{{"west", 1}, {"east", 3}}));
}

TEST(PlanWithRefusals, ASettledPoolReplacesAReplicaLostInARefusedRegionThere) {
  Cluster cluster(Priority({{"west", 2}, {"east", 1}}), {{"west", 1}, {"east", 2}});
  for (int64_t now = 0; now < 30; ++now) cluster.Reconcile(now, 4, 3);
  ASSERT_TRUE(cluster.last().settled);
  ASSERT_EQ(cluster.PodsPerRegion(), (std::map<std::string, int>{{"west", 1}, {"east", 3}}));
  // West's one replica is lost: it comes back in west (its GPU is free again), nothing else
  // moves.
  cluster.Lose("pool-west-0");
  int deletions = 0;
  for (int64_t now = 30; now < 60; ++now) {
    deletions += static_cast<int>(cluster.Reconcile(now, 4, 3).size());
  }
  EXPECT_EQ(deletions, 0);
  EXPECT_EQ(cluster.PodsPerRegion(), (std::map<std::string, int>{{"west", 1}, {"east", 3}}));
  EXPECT_TRUE(cluster.last().settled);
}

TEST(PlanWithRefusals, SpillOverWithRoomStillMovesStuckReplicasOnce) {
  // West one GPU, east three: the two replicas west refuses move to east and run there.
  Cluster cluster(Priority({{"west", 2}, {"east", 1}}), {{"west", 1}, {"east", 3}});
  int deletions = 0;
  for (int64_t now = 0; now < 60; ++now) {
    deletions += static_cast<int>(cluster.Reconcile(now, 3, 3).size());
  }
  EXPECT_EQ(deletions, 2);
  EXPECT_EQ(cluster.PodsPerRegion(), (std::map<std::string, int>{{"west", 1}, {"east", 2}}));
  EXPECT_TRUE(cluster.refusals().empty());
  EXPECT_FALSE(cluster.last().settled);
}

}  // namespace
}  // namespace sluice::placement
