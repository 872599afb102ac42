// How many replicas of a RolloutPool each placement region should hold.
//
// Input is spec.placement (regions with weight, priority and maxReplicas; strategy Spread or
// Priority), the desired replica count (spec.replicas) and the regions where new replicas
// currently cannot be scheduled (the spill-over signal, see spillover.h). Output is one target
// per spec region, in spec order, plus the replicas that fit nowhere. All counts are replicas
// (one Pod each).
//
// Rules (the contract is the `placement` section of crds/rolloutpools.yaml):
//   - Spread: replicas are shared over all regions in proportion to weight. A region whose share
//     exceeds its maxReplicas is held at maxReplicas and the overflow is shared over the others,
//     again in proportion to weight (repeated until nothing overflows). Fractions are settled
//     once, at the end, by largest remainder; equal remainders go to the earlier spec region.
//   - Priority: regions are filled in descending priority up to maxReplicas; regions of equal
//     priority share their level by weight exactly as Spread does within that level. A region
//     without a priority counts as priority 0 (the CRD requires it with Priority).
//   - Weight 0 (or negative, treated as 0): the region takes replicas only when every
//     positive-weight region it shares with is full; zero-weight regions then share equally.
//     To switch a region off, use maxReplicas: 0.
//   - Blocked regions (keys of `running_in_blocked`) are treated as having maxReplicas equal to
//     the replicas already placed there (the map's value) when that is lower than their own
//     maxReplicas, so new replicas go to the next region that can take them.
//   - Replicas that fit nowhere (every region at its cap) are not placed: `unplaced` counts them
//     so the controller can report it (e.g. a ScalingLimited condition).
//   - A strategy other than "Priority" is Spread (the CRD enum allows only the two).
//
// Moving replicas: DesiredPerRegion is the ideal placement and ignores where replicas already
// are. Fed straight into ChooseReplicasToRemove/ReplicasToCreate (scale_down.h) it would move a
// Ready replica back to a preferred region as soon as that region stops being blocked, every time
// it gets blocked again. DesiredPerRegionSticky avoids this: it never targets fewer replicas than
// a region already holds unless spec.replicas itself shrinks (or maxReplicas / blocking forces
// it), so preferred regions are refilled only by scale-up and emptied in strategy order by
// scale-down. The controller should use the sticky form.
//
// Pure functions: no I/O, no clocks. Thread safety: values only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/generated/rollout_pool_types.h"

namespace sluice::placement {

// The desired number of replicas in one region.
struct RegionTarget {
  std::string region;    // RolloutPoolSpecPlacementRegion.name.
  int64_t replicas = 0;  // Replicas (Pods) to run there, >= 0.

  friend bool operator==(const RegionTarget&, const RegionTarget&) = default;
};

// One target per spec region (spec order) and the replicas no region could take.
struct PlacementPlan {
  std::vector<RegionTarget> targets;
  int64_t unplaced = 0;  // spec.replicas - sum of targets, >= 0.

  friend bool operator==(const PlacementPlan&, const PlacementPlan&) = default;
};

// The ideal placement of `replicas` (negative counts as 0) over placement.regions.
// `running_in_blocked`: region name -> replicas placed there now (scheduled, not leaving), for
// each blocked region (spillover.h: BlockedRegions, RunningInBlocked). Names not in the spec are
// ignored.
PlacementPlan DesiredPerRegion(const api::RolloutPoolSpecPlacement& placement, int64_t replicas,
                               const std::map<std::string, int64_t>& running_in_blocked);

// As DesiredPerRegion, but keeps the replicas already placed: `placed` is region name -> replicas
// there now that are scheduled and not leaving (spillover.h: PlacedPerRegion).
//   - When the placed replicas (each region's count capped by its maxReplicas and blocking) are
//     at least `replicas`, every region's target is at most what it holds: the pool shrinks by
//     the strategy (Priority empties the lowest priority first, Spread the regions most over
//     their weighted share) and no region grows.
//   - Otherwise every region keeps at least what it holds and the extra replicas go where the
//     strategy wants them (Priority: highest priority with room; Spread: the regions most under
//     their weighted share).
PlacementPlan DesiredPerRegionSticky(const api::RolloutPoolSpecPlacement& placement,
                                     int64_t replicas,
                                     const std::map<std::string, int64_t>& running_in_blocked,
                                     const std::map<std::string, int64_t>& placed);

}  // namespace sluice::placement
