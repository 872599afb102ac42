// Spill-over: which placement regions cannot take replicas right now, and which replicas leave
// them.
//
// A replica whose Pod has been Pending with PodScheduled=False/Unschedulable for at least
// spec.placement.spilloverAfterSeconds blocks its region. capacity_refusals.h remembers the
// blocked regions through the crunch and passes them, with the replicas still placed there
// (RunningInBlocked), to the planner (region_targets.h); the plan then caps the blocked region at
// what it already runs, so the spilled replicas are deleted (ChooseReplicasToRemove against that
// plan) and re-created by ReplicasToCreate in the next region that can take them, or, when no
// region can, wait where they are.
//
// Per the CRD, spill-over belongs to strategy Priority ("a replica Pending this long is deleted
// and re-created in the next region in order"); these functions do not look at the strategy, so
// the controller passes an empty blocked set with Spread unless it decides otherwise.
//
// Drift back: nothing here ever moves a Ready replica. Only replicas that are not Ready and are
// Pending+Unschedulable are spilled. A region stops being blocked once no such replica is left
// in it, but the replicas that spilled out stay where they were re-created: preferred regions
// are refilled only through normal scale-up (new replicas go to the preferred region first) and
// scale-down (replicas leave the least preferred regions first), which is what
// DesiredPerRegionSticky plans when given PlacedPerRegion.
//
// Times are absolute seconds (e.g. Unix seconds) on the caller's clock; `now_seconds` is a
// parameter. Pure functions: no I/O, no clocks. Thread safety: values only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sluice::placement {

// What the controller knows about one replica (one Pod) of the pool.
struct ReplicaFacts {
  std::string name;       // Pod name, `<pool>-<region>-<index>`.
  std::string region;     // Placement region name (label on the Pod).
  int replica_index = 0;  // Index within the region, >= 0.
  bool ready = false;     // Pod Ready condition True.
  // Pod Pending with PodScheduled=False, reason Unschedulable.
  bool pending_unschedulable = false;
  // Pod Pending and not bound to a node yet (PodScheduled not True): just created, or refused.
  bool unscheduled = false;
  // The scheduler's reason when it refused the Pod (the PodScheduled condition's message, e.g.
  // "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, ..."); "" otherwise.
  std::string scheduler_message;
  // When the Pod became Pending (absolute seconds; its creationTimestamp); unset when the Pod is
  // not Pending or the time is unknown.
  std::optional<int64_t> pending_since_seconds;
  int64_t in_flight = -1;  // Work units in flight from the worker's /v1/status; -1 unknown.
  bool draining = false;   // Already chosen to leave (being drained or deleted).
};

// Regions with a non-Ready replica that is Pending+Unschedulable and has been Pending for at
// least `spillover_after_seconds` (now - pending_since >= spillover_after; 0 blocks at once).
// A replica without pending_since_seconds never blocks (its age is unknown); draining replicas
// count too (they still show the region has no room).
std::set<std::string> BlockedRegions(const std::vector<ReplicaFacts>& replicas, int64_t now_seconds,
                                     int64_t spillover_after_seconds);

// Names (sorted) of the replicas that make their region blocked, by the rule above, less the
// ones already draining: delete them; ReplicasToCreate re-creates them in the next region.
std::vector<std::string> ReplicasToSpill(const std::vector<ReplicaFacts>& replicas,
                                         int64_t now_seconds, int64_t spillover_after_seconds);

// Replicas placed per region: not draining and not Pending+Unschedulable (so Ready, starting,
// or Pending but not yet refused by the scheduler). Regions without any are absent.
// This is the `placed` input of DesiredPerRegionSticky.
std::map<std::string, int64_t> PlacedPerRegion(const std::vector<ReplicaFacts>& replicas);

// PlacedPerRegion restricted to `blocked`, with an entry (possibly 0) for every blocked region.
// This is the `running_in_blocked` input of DesiredPerRegion(Sticky).
std::map<std::string, int64_t> RunningInBlocked(const std::vector<ReplicaFacts>& replicas,
                                                const std::set<std::string>& blocked);

}  // namespace sluice::placement
