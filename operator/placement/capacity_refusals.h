// Spill-over that settles: the placement regions that refused a pool's replicas, remembered from
// one reconcile to the next, and the plan that follows from them.
//
// Without memory, spill-over flaps when no region has room: the replicas leave the first region
// once they stay Unschedulable there, the first region then holds no stuck replica and so looks
// free again, and when the last region refuses too, every region is capped, the stuck replicas
// are deleted as surplus and re-created in the first region, round after round. Here a region
// that refused (spillover.h, BlockedRegions) stays refused while the crunch lasts, that is until
// the pool has all its replicas and every one is Ready (a pool that sees fewer replicas than it
// wants, e.g. while its cache has not caught up with a spill, is not over the crunch); then the
// memory is dropped, and preferred regions are refilled by scale-up as before (spillover.h,
// "Drift back"). A refused region keeps room for the most replicas it ran while refused, so a
// replica lost there (a crash, a node failure) is re-created there.
//
// When the refused regions and maxReplicas leave room for fewer replicas than the pool wants,
// spill-over has nowhere left to go for the rest: that many stuck replicas stay Pending where
// they wait (usually the last region tried) instead of being deleted and re-created elsewhere,
// and the pool is settled: the controller reports InsufficientCapacity with the regions and the
// scheduler's reasons. Stuck replicas beyond that still spill into regions that have room. The
// parked replicas start as soon as the region where they wait gets room; room that appears in
// another refused region is not used until the crunch ends or the placement changes (the
// controller forgets the refusals when spec.placement or the replica template changes, not
// when only spec.replicas does, so the autoscaler does not restart the cycle).
//
// Only strategy Priority spills (crds/rolloutpools.yaml, spilloverAfterSeconds); with Spread the
// plan is DesiredPerRegionSticky without blocked regions and nothing is remembered.
//
// Times are absolute seconds on the caller's clock. Pure functions: no I/O, no clocks. Thread
// safety: values only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/generated/rollout_pool_types.h"
#include "operator/placement/region_targets.h"
#include "operator/placement/spillover.h"

namespace sluice::placement {

// One region's refusal.
struct Refusal {
  int64_t since_seconds = 0;  // When the region was first seen refusing (absolute seconds).
  std::string message;        // The scheduler's latest reason there; may be "".
  int64_t placed = 0;         // The most replicas placed there (PlacedPerRegion) while refused.

  friend bool operator==(const Refusal&, const Refusal&) = default;
};

// Region name -> its refusal, for the regions that refused during the current crunch.
using Refusals = std::map<std::string, Refusal>;

// What to remember after this round: empty when the crunch is over (`desired` non-draining
// replicas, every one Ready); otherwise `remembered` plus every region blocked now
// (BlockedRegions with `spillover_after_seconds`), a new one since `now_seconds`, each with the
// scheduler message of its first Pending+Unschedulable replica by name that has one, and with
// `placed` raised to the replicas placed there now when that is more.
Refusals RememberRefusals(const Refusals& remembered, const std::vector<ReplicaFacts>& replicas,
                          int64_t desired, int64_t now_seconds, int64_t spillover_after_seconds);

// The placement for this round.
struct SpilloverPlan {
  PlacementPlan plan;
  // Replicas (sorted names) to delete so that they are re-created in the next region: they stayed
  // Unschedulable in a refused region and another region has room for them.
  std::vector<std::string> spill;
  // True when some replicas fit nowhere (refused regions, maxReplicas) and wait where they are.
  bool settled = false;
};

// Plans `replicas` over `placement` given the pool's replicas and this round's refusals
// (RememberRefusals' result). Spread, or no refusal: DesiredPerRegionSticky with nothing blocked.
// Priority: DesiredPerRegionSticky with each refused region capped at the replicas it runs
// (RunningInBlocked) or, when more, its Refusal::placed; when that leaves U replicas unplaced,
// the caps of the refused regions are raised by up to U of their Pending+Unschedulable replicas,
// higher priority first, and the plan is made again (settled). `spill` is then the Unschedulable
// replicas of a refused region that ChooseReplicasToRemove takes out under the plan, when the
// plan also creates replicas (ReplicasToCreate; otherwise the removal is a scale-down). Their own
// Unschedulable time does not matter: the region's refusal (made when a replica there had waited
// spilloverAfterSeconds) is what moves them.
SpilloverPlan PlanWithRefusals(const api::RolloutPoolSpecPlacement& placement, int64_t replicas,
                               const std::vector<ReplicaFacts>& facts, const Refusals& refusals);

}  // namespace sluice::placement
