// Turning a placement plan into replica changes: which replicas leave a region that holds more
// than its target, and which (region, index) pairs to create where it holds fewer.
//
// Counting: a draining replica is already leaving. It does not count toward its region's target
// (so it is never chosen again, and it does not stop a replacement from being created), but its
// index stays in use until its Pod is gone (so a new replica never reuses the name of one still
// shutting down).
//
// Which replicas leave first, within a region over its target (most expendable first):
//   1. not Ready and Pending+Unschedulable (it holds no GPU and may never get one);
//   2. not Ready and Pending otherwise (not started yet);
//   3. not Ready for any other reason (failed, crash-looping, still loading);
//   4. Ready, least `in_flight` work first. An unknown load (-1: the worker did not answer
//      /v1/status) counts as the most loaded: a replica known to be idle is removed before one
//      whose work we cannot see, because removing the silent one might abort in-flight rollouts.
//      (A replica that stays silent is handled by health checks, not by scale-down.)
// Ties go to the highest replica_index, then the greatest name, so the lowest indices (and
// names) stay stable.
//
// The controller drains Ready replicas before deleting them and may delete the others at once;
// it marks the chosen replicas draining so the next reconcile does not choose more.
//
// Pure functions: no I/O, no clocks. Thread safety: values only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "operator/placement/region_targets.h"
#include "operator/placement/spillover.h"

namespace sluice::placement {

// Names of the replicas to remove, most expendable first: every non-draining replica in a region
// not in `targets` (the region left the spec; those come first, by region name, then in the
// order above), then, for each target region in order, the replicas over its target by the
// ranking above.
std::vector<std::string> ChooseReplicasToRemove(const std::vector<ReplicaFacts>& replicas,
                                                const std::vector<RegionTarget>& targets);

// (region, replica_index) for each replica missing from a target region (target minus its
// non-draining replicas), in target order; within a region the lowest indices not used by any
// replica there (draining ones included), ascending. The caller names the Pod
// `<pool>-<region>-<index>`.
std::vector<std::pair<std::string, int>> ReplicasToCreate(const std::vector<ReplicaFacts>& replicas,
                                                          const std::vector<RegionTarget>& targets);

}  // namespace sluice::placement
