#include "operator/placement/region_targets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

namespace sluice::placement {
namespace {

// One spec region: name, weight, maxReplicas, priority.
struct R {
  R(const char* n, int64_t w = 1, std::optional<int64_t> m = std::nullopt,
    std::optional<int64_t> p = std::nullopt)
      : name(n), weight(w), max_replicas(m), priority(p) {}
  std::string name;
  int64_t weight;
  std::optional<int64_t> max_replicas;
  std::optional<int64_t> priority;
};

api::RolloutPoolSpecPlacement Make(const std::string& strategy, const std::vector<R>& regions) {
  api::RolloutPoolSpecPlacement p;
  p.strategy = strategy;
  for (const R& r : regions) {
    api::RolloutPoolSpecPlacementRegion region;
    region.name = r.name;
    region.weight = r.weight;
    region.max_replicas = r.max_replicas;
    region.priority = r.priority;
    p.regions.push_back(region);
  }
  return p;
}

std::vector<int64_t> Counts(const PlacementPlan& plan) {
  std::vector<int64_t> out;
  for (const RegionTarget& t : plan.targets) out.push_back(t.replicas);
  return out;
}

using Counts3 = std::vector<int64_t>;

// ---- Spread ----

TEST(DesiredPerRegionSpread, FiveOverEqualWeightsTiesGoToEarlierRegions) {
  auto p = Make("Spread", {{"a"}, {"b"}, {"c"}});
  PlacementPlan plan = DesiredPerRegion(p, 5, {});
  EXPECT_EQ(plan, (PlacementPlan{{{"a", 2}, {"b", 2}, {"c", 1}}, 0}));
}

TEST(DesiredPerRegionSpread, SevenOverThreeToOne) {
  auto p = Make("Spread", {{"a", 3}, {"b", 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 7, {})), (Counts3{5, 2}));
}

TEST(DesiredPerRegionSpread, LargestRemainderNotEarliestRegion) {
  // Weights 1/2/3 over 4: 0.667, 1.333, 2.0 -> floors 0, 1, 2, one left to a (.667) -> 1, 1, 2.
  auto p = Make("Spread", {{"a", 1}, {"b", 2}, {"c", 3}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 4, {})), (Counts3{1, 1, 2}));
  // Over 5: 0.833, 1.667, 2.5 -> floors 0,1,2, two left: a (.833) then b (.667) -> 1, 2, 2.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {})), (Counts3{1, 2, 2}));
}

TEST(DesiredPerRegionSpread, ExactDivisionAndZeroAndOne) {
  auto p = Make("Spread", {{"a"}, {"b"}, {"c"}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 6, {})), (Counts3{2, 2, 2}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 1, {})), (Counts3{1, 0, 0}));
  EXPECT_EQ(DesiredPerRegion(p, 0, {}), (PlacementPlan{{{"a", 0}, {"b", 0}, {"c", 0}}, 0}));
  EXPECT_EQ(DesiredPerRegion(p, -3, {}), (PlacementPlan{{{"a", 0}, {"b", 0}, {"c", 0}}, 0}));
}

TEST(DesiredPerRegionSpread, StrategyOtherThanPriorityIsSpread) {
  auto p = Make("", {{"a", 1, std::nullopt, 5}, {"b", 1, std::nullopt, 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 4, {})), (Counts3{2, 2}));
}

TEST(DesiredPerRegionSpread, MaxReplicasCapRedistributesByWeight) {
  // Weights 2/1/1 over 8: 4, 2, 2; a capped at 1 -> 7 left over b, c by weight 1:1 -> 4, 3
  // (tie to the earlier region).
  auto p = Make("Spread", {{"a", 2, 1}, {"b", 1}, {"c", 1}});
  PlacementPlan plan = DesiredPerRegion(p, 8, {});
  EXPECT_EQ(plan, (PlacementPlan{{{"a", 1}, {"b", 4}, {"c", 3}}, 0}));
}

TEST(DesiredPerRegionSpread, OverflowFollowsWeightsOfTheOthers) {
  // a capped at 2; 10 left over b (weight 3) and c (weight 1): 7.5, 2.5 -> 8, 2.
  auto p = Make("Spread", {{"a", 4, 2}, {"b", 3}, {"c", 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 12, {})), (Counts3{2, 8, 2}));
}

TEST(DesiredPerRegionSpread, CascadingCaps) {
  // 9 over 1/1/1: 3 each; a cap 1 -> b, c 4 each; b cap 2 -> c 6.
  auto p = Make("Spread", {{"a", 1, 1}, {"b", 1, 2}, {"c", 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 9, {})), (Counts3{1, 2, 6}));
}

TEST(DesiredPerRegionSpread, CapNotReachedLeavesSharesAlone) {
  auto p = Make("Spread", {{"a", 1, 3}, {"b", 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 6, {})), (Counts3{3, 3}));
}

TEST(DesiredPerRegionSpread, UnplacedWhenAllRegionsFull) {
  auto p = Make("Spread", {{"a", 1, 2}, {"b", 5, 3}});
  EXPECT_EQ(DesiredPerRegion(p, 9, {}), (PlacementPlan{{{"a", 2}, {"b", 3}}, 4}));
  EXPECT_EQ(DesiredPerRegion(p, 5, {}), (PlacementPlan{{{"a", 2}, {"b", 3}}, 0}));
}

TEST(DesiredPerRegionSpread, MaxReplicasZeroSwitchesRegionOff) {
  auto p = Make("Spread", {{"a", 1, 0}, {"b", 1}});
  EXPECT_EQ(DesiredPerRegion(p, 3, {}), (PlacementPlan{{{"a", 0}, {"b", 3}}, 0}));
  auto off = Make("Spread", {{"a", 1, 0}});
  EXPECT_EQ(DesiredPerRegion(off, 3, {}), (PlacementPlan{{{"a", 0}}, 3}));
}

TEST(DesiredPerRegionSpread, ZeroWeightTakesOnlyOverflow) {
  auto p = Make("Spread", {{"a", 1, 2}, {"b", 0}, {"c", 0}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 2, {})), (Counts3{2, 0, 0}));
  // 3 overflow shared equally by the zero-weight regions, tie to b.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {})), (Counts3{2, 2, 1}));
  auto all_zero = Make("Spread", {{"a", 0}, {"b", 0}});
  EXPECT_EQ(Counts(DesiredPerRegion(all_zero, 3, {})), (Counts3{2, 1}));
  auto negative = Make("Spread", {{"a", -4}, {"b", 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(negative, 3, {})), (Counts3{0, 3}));
}

TEST(DesiredPerRegionSpread, BlockedRegionCappedAtRunning) {
  auto p = Make("Spread", {{"a"}, {"b"}, {"c"}});
  // 6 over three: a blocked with 1 running -> a 1, b and c share 5 -> 3, 2.
  EXPECT_EQ(DesiredPerRegion(p, 6, {{"a", 1}}), (PlacementPlan{{{"a", 1}, {"b", 3}, {"c", 2}}, 0}));
  // Blocked with more running than its share changes nothing.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 6, {{"a", 4}})), (Counts3{2, 2, 2}));
  // Blocked regions never exceed their own maxReplicas.
  auto capped = Make("Spread", {{"a", 1, 1}, {"b"}});
  EXPECT_EQ(Counts(DesiredPerRegion(capped, 4, {{"a", 3}})), (Counts3{1, 3}));
  // Unknown region names are ignored; negative running counts as 0.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 3, {{"zz", 0}, {"c", -2}})), (Counts3{2, 1, 0}));
}

TEST(DesiredPerRegionSpread, AllBlockedLeavesReplicasUnplaced) {
  auto p = Make("Spread", {{"a"}, {"b"}});
  EXPECT_EQ(DesiredPerRegion(p, 5, {{"a", 1}, {"b", 2}}), (PlacementPlan{{{"a", 1}, {"b", 2}}, 2}));
}

// ---- Priority ----

TEST(DesiredPerRegionPriority, FillsHighestPriorityFirst) {
  auto p = Make("Priority", {{"low", 1, std::nullopt, 1}, {"high", 1, 3, 10}, {"mid", 1, 2, 5}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 2, {})), (Counts3{0, 2, 0}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 3, {})), (Counts3{0, 3, 0}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 4, {})), (Counts3{0, 3, 1}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {})), (Counts3{0, 3, 2}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 9, {})), (Counts3{4, 3, 2}));
}

TEST(DesiredPerRegionPriority, UncappedTopTakesEverything) {
  auto p = Make("Priority", {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 5}});
  EXPECT_EQ(DesiredPerRegion(p, 7, {}), (PlacementPlan{{{"a", 7}, {"b", 0}}, 0}));
}

TEST(DesiredPerRegionPriority, NothingPlacedBeyondCaps) {
  auto p = Make("Priority", {{"a", 1, 2, 10}, {"b", 1, 1, 5}});
  EXPECT_EQ(DesiredPerRegion(p, 6, {}), (PlacementPlan{{{"a", 2}, {"b", 1}}, 3}));
}

TEST(DesiredPerRegionPriority, EqualPriorityShareByWeight) {
  // Level 10: a (weight 3), b (weight 1), uncapped: 7 -> 5, 2; c never used.
  auto p =
      Make("Priority",
           {{"a", 3, std::nullopt, 10}, {"b", 1, std::nullopt, 10}, {"c", 1, std::nullopt, 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 7, {})), (Counts3{5, 2, 0}));
}

TEST(DesiredPerRegionPriority, EqualPriorityTiesGoToEarlierRegion) {
  auto p = Make("Priority",
                {{"a", 1, std::nullopt, 3}, {"b", 1, std::nullopt, 3}, {"c", 1, std::nullopt, 3}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {})), (Counts3{2, 2, 1}));
}

TEST(DesiredPerRegionPriority, LevelCapsThenNextLevel) {
  // Level 10: a cap 2, b cap 4 (weights 1:1): 5 -> 2, 3 (a capped, b takes the rest of the
  // level); 8 -> 2, 4 and 2 spill to c.
  auto p = Make("Priority", {{"a", 1, 2, 10}, {"b", 1, 4, 10}, {"c", 1, std::nullopt, 0}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {})), (Counts3{2, 3, 0}));
  EXPECT_EQ(Counts(DesiredPerRegion(p, 8, {})), (Counts3{2, 4, 2}));
}

TEST(DesiredPerRegionPriority, MissingPriorityIsZero) {
  auto p = Make("Priority", {{"a", 1, std::nullopt, std::nullopt}, {"b", 1, 1, 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 3, {})), (Counts3{2, 1}));
}

TEST(DesiredPerRegionPriority, BlockedRegionSpillsToNext) {
  auto p = Make("Priority",
                {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 5}, {"c", 1, std::nullopt, 1}});
  // a blocked with 2 running: 2 stay, the rest goes to b.
  EXPECT_EQ(DesiredPerRegion(p, 5, {{"a", 2}}), (PlacementPlan{{{"a", 2}, {"b", 3}, {"c", 0}}, 0}));
  // a and b blocked: c takes the rest.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {{"a", 2}, {"b", 1}})), (Counts3{2, 1, 2}));
  // a blocked with nothing running there.
  EXPECT_EQ(Counts(DesiredPerRegion(p, 5, {{"a", 0}})), (Counts3{0, 5, 0}));
}

TEST(DesiredPerRegionPriority, BlockedSpillStopsAtCapsAndReportsUnplaced) {
  auto p = Make("Priority", {{"a", 1, std::nullopt, 10}, {"b", 1, 2, 5}});
  EXPECT_EQ(DesiredPerRegion(p, 5, {{"a", 1}}), (PlacementPlan{{{"a", 1}, {"b", 2}}, 2}));
}

TEST(DesiredPerRegionPriority, BlockedRegionWithinLevelSharesToPeers) {
  auto p =
      Make("Priority",
           {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 10}, {"c", 1, std::nullopt, 1}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 6, {{"a", 1}})), (Counts3{1, 5, 0}));
}

// ---- Sticky ----

TEST(DesiredPerRegionSticky, SteadyStateKeepsSpilledReplicas) {
  // A replica spilled from a to b earlier; a is no longer blocked. The ideal plan would move it
  // back (a 3, b 0); the sticky plan keeps it.
  auto p = Make("Priority", {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 5}});
  EXPECT_EQ(Counts(DesiredPerRegion(p, 3, {})), (Counts3{3, 0}));
  EXPECT_EQ(DesiredPerRegionSticky(p, 3, {}, {{"a", 2}, {"b", 1}}),
            (PlacementPlan{{{"a", 2}, {"b", 1}}, 0}));
}

TEST(DesiredPerRegionSticky, ScaleUpRefillsPreferredRegion) {
  auto p = Make("Priority", {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 5}});
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 5, {}, {{"a", 2}, {"b", 1}})), (Counts3{4, 1}));
}

TEST(DesiredPerRegionSticky, ScaleDownEmptiesLeastPreferredFirst) {
  auto p = Make("Priority",
                {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 5}, {"c", 1, std::nullopt, 1}});
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 4, {}, {{"a", 2}, {"b", 2}, {"c", 2}})),
            (Counts3{2, 2, 0}));
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 3, {}, {{"a", 2}, {"b", 2}, {"c", 2}})),
            (Counts3{2, 1, 0}));
}

TEST(DesiredPerRegionSticky, SpreadScaleUpGoesToMostUnderShare) {
  auto p = Make("Spread", {{"a"}, {"b"}, {"c"}});
  // Holding 2, 1, 0; growing to 4: a keeps 2, b and c share the other 2 -> 1, 1.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 4, {}, {{"a", 2}, {"b", 1}})), (Counts3{2, 1, 1}));
  // Growing to 6: ideal 2, 2, 2 is reachable.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 6, {}, {{"a", 2}, {"b", 1}})), (Counts3{2, 2, 2}));
  // Steady at 3 keeps 2, 1, 0.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 3, {}, {{"a", 2}, {"b", 1}})), (Counts3{2, 1, 0}));
}

TEST(DesiredPerRegionSticky, SpreadScaleDownTakesFromMostOverShare) {
  auto p = Make("Spread", {{"a"}, {"b"}, {"c"}});
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 2, {}, {{"a", 2}, {"b", 1}})), (Counts3{1, 1, 0}));
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 0, {}, {{"a", 2}, {"b", 1}})), (Counts3{0, 0, 0}));
}

TEST(DesiredPerRegionSticky, CapsAndBlockingStillApply) {
  auto p = Make("Priority", {{"a", 1, 2, 10}, {"b", 1, std::nullopt, 5}});
  // maxReplicas lowered below what a holds: a drops to its cap, b takes the rest.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 4, {}, {{"a", 4}})), (Counts3{2, 2}));
  // Blocked b keeps what runs there; the rest is unplaced once a is full.
  EXPECT_EQ(DesiredPerRegionSticky(p, 5, {{"b", 1}}, {{"a", 1}, {"b", 1}}),
            (PlacementPlan{{{"a", 2}, {"b", 1}}, 2}));
  // Placed counts for regions not in the spec are ignored.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 3, {}, {{"gone", 3}})), (Counts3{2, 1}));
}

TEST(DesiredPerRegionSticky, EqualPriorityLevelWithFloors) {
  // Level 10 shares by weight but a already holds 3: growing to 5 gives b the 2 new ones.
  auto p =
      Make("Priority",
           {{"a", 1, std::nullopt, 10}, {"b", 1, std::nullopt, 10}, {"c", 1, std::nullopt, 1}});
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 5, {}, {{"a", 3}, {"c", 1}})), (Counts3{3, 1, 1}));
  // Growing to 8: the level holds 7, 3.5 each; a is already over its floor, tie to a.
  EXPECT_EQ(Counts(DesiredPerRegionSticky(p, 8, {}, {{"a", 3}, {"c", 1}})), (Counts3{4, 3, 1}));
}

TEST(DesiredPerRegionSticky, PinsBothBoundsInOneLevel) {
  // Level of three: 13 by weights 3/4/4 would be 3.5, 4.7, 4.7; c is capped at 4 and a holds 4,
  // so both are pinned and b takes the remaining 5.
  auto p = Make("Priority", {{"a", 3, std::nullopt, 3}, {"b", 4, std::nullopt, 3}, {"c", 4, 4, 3}});
  EXPECT_EQ(DesiredPerRegionSticky(p, 13, {}, {{"a", 4}, {"b", 3}}),
            (PlacementPlan{{{"a", 4}, {"b", 5}, {"c", 4}}, 0}));
}

// ---- Invariants over random specs (fixed seed) ----

TEST(DesiredPerRegionProperties, BoundsTotalsPriorityOrderAndStickiness) {
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<R> regions;
    const int n = pick(1, 6);
    for (int i = 0; i < n; ++i) {
      R r("r");
      r.name = "r" + std::to_string(i);
      r.weight = pick(0, 5);
      if (pick(0, 2) == 0) r.max_replicas = pick(0, 6);
      r.priority = pick(0, 3);
      regions.push_back(r);
    }
    auto p = Make(pick(0, 1) == 0 ? "Spread" : "Priority", regions);
    const int64_t wanted = pick(0, 30);
    std::map<std::string, int64_t> blocked;
    std::map<std::string, int64_t> placed;
    for (int i = 0; i < n; ++i) {
      if (pick(0, 3) == 0) blocked["r" + std::to_string(i)] = pick(0, 4);
      if (pick(0, 1) == 0) placed["r" + std::to_string(i)] = pick(0, 8);
    }
    std::vector<int64_t> cap(static_cast<size_t>(n));
    int64_t cap_sum = 0;
    int64_t kept = 0;
    for (int i = 0; i < n; ++i) {
      const std::string name = "r" + std::to_string(i);
      int64_t c = regions[static_cast<size_t>(i)].max_replicas.value_or(wanted);
      if (blocked.contains(name)) c = std::min(c, blocked[name]);
      cap[static_cast<size_t>(i)] = std::min(c, wanted);
      cap_sum += cap[static_cast<size_t>(i)];
      kept += std::min(placed.contains(name) ? placed[name] : 0, cap[static_cast<size_t>(i)]);
    }
    const int64_t total = std::min(wanted, cap_sum);
    for (bool sticky : {false, true}) {
      PlacementPlan plan = sticky ? DesiredPerRegionSticky(p, wanted, blocked, placed)
                                  : DesiredPerRegion(p, wanted, blocked);
      ASSERT_EQ(plan.targets.size(), static_cast<size_t>(n));
      EXPECT_EQ(plan.unplaced, wanted - total);
      int64_t sum = 0;
      for (int i = 0; i < n; ++i) {
        const RegionTarget& t = plan.targets[static_cast<size_t>(i)];
        EXPECT_EQ(t.region, "r" + std::to_string(i));
        EXPECT_GE(t.replicas, 0);
        EXPECT_LE(t.replicas, cap[static_cast<size_t>(i)]);
        sum += t.replicas;
        if (sticky) {
          const int64_t here = std::min(placed.contains(t.region) ? placed[t.region] : 0,
                                        cap[static_cast<size_t>(i)]);
          if (kept >= total) {
            EXPECT_LE(t.replicas, here);
          } else {
            EXPECT_GE(t.replicas, here);
          }
        } else if (p.strategy == "Priority" && t.replicas > 0) {
          // Every region of higher priority is full.
          for (int j = 0; j < n; ++j) {
            if (*regions[static_cast<size_t>(j)].priority >
                *regions[static_cast<size_t>(i)].priority) {
              EXPECT_EQ(plan.targets[static_cast<size_t>(j)].replicas, cap[static_cast<size_t>(j)]);
            }
          }
        }
      }
      EXPECT_EQ(sum, total);
    }
  }
}

}  // namespace
}  // namespace sluice::placement
