// Spill-over that settles: the placement regions that refused a pool's replicas, remembered from
// one reconcile to the next, and the plan that follows from them.
//
// Without memory, spill-over flaps when no region has room: the replicas leave the first region
// once they stay Unschedulable there, the first region then holds no stuck replica and so looks
// free again, and when the last region refuses too, every region is capped, the stuck replicas
// are deleted as surplus and re-created in the first region, round after round. Here a region
// that refused (spillover.h, BlockedRegions) stays refused while the crunch lasts, that is while
// any replica of the pool still waits for a node; once every replica is bound to a node the
// memory is dropped, and preferred regions are refilled by scale-up as before (spillover.h,
// "Drift back").
//
// When the refused regions and maxReplicas leave room for fewer replicas than the pool wants,
// spill-over has nowhere left to go for the rest: that many stuck replicas stay Pending where
// they are (in the regions the strategy prefers first) instead of being deleted and re-created
// elsewhere, and the pool is settled: the controller reports InsufficientCapacity with the
// regions and the scheduler's reasons. Stuck replicas beyond that still spill into regions that
// have room. The parked replicas start as soon as their region gets room; to try the other
// regions again, change the pool's spec (the controller forgets the refusals at a new
// generation).
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

  friend bool operator==(const Refusal&, const Refusal&) = default;
};

// Region name -> its refusal, for the regions that refused during the current crunch.
using Refusals = std::map<std::string, Refusal>;

// What to remember after this round: empty when no replica is waiting for a node (every
// non-draining replica is bound, so the crunch is over); otherwise `remembered` plus every region
// blocked now (BlockedRegions with `spillover_after_seconds`), a new one since `now_seconds`,
// each with the scheduler message of its first stuck replica by name when there is one.
Refusals RememberRefusals(const Refusals& remembered, const std::vector<ReplicaFacts>& replicas,
                          int64_t now_seconds, int64_t spillover_after_seconds);

// The placement for this round.
struct SpilloverPlan {
  PlacementPlan plan;
  // Replicas (sorted names) to delete so that they are re-created in the next region: they stayed
  // Unschedulable in a refused region. Empty when the pool settles.
  std::vector<std::string> spill;
  // True when every region that could take the missing replicas refused them: the pool settles.
  bool settled = false;
};

// Plans `replicas` over `placement` given the pool's replicas and this round's refusals
// (RememberRefusals' result). Spread, or no refusal: DesiredPerRegionSticky with nothing blocked.
// Priority: DesiredPerRegionSticky with each refused region capped at the replicas it runs
// (RunningInBlocked); when that leaves U replicas unplaced, the caps of the refused regions are
// raised by up to U of their Pending+Unschedulable replicas, preferred regions first, and the
// plan is made again (settled). `spill` is then the replicas stuck for `spillover_after_seconds`
// (ReplicasToSpill; the caller's threshold, rounding margin included) in a refused region that
// ChooseReplicasToRemove takes out under the plan.
SpilloverPlan PlanWithRefusals(const api::RolloutPoolSpecPlacement& placement, int64_t replicas,
                               const std::vector<ReplicaFacts>& facts, const Refusals& refusals,
                               int64_t now_seconds, int64_t spillover_after_seconds);

}  // namespace sluice::placement
