// A RolloutPool's status from what the controller observed of its replica Pods and workers
// (docs/operator.md, "RolloutPool"; the contract is the status section of crds/rolloutpools.yaml).
//
// Counting: a draining replica is already leaving (placement/scale_down.h), so it counts in
// none of replicas, readyReplicas, updatedReplicas or the per-region counts; its worker still
// counts toward tokensPerSecond and policies[].latestVersion (it still generates, and what it
// reports was published).
//
//   replicas         replicas not draining
//   readyReplicas    of those, Ready (the worker's /readyz: every hosted Policy is loaded)
//   updatedReplicas  of those, built from the current template (template hash matches)
//   selector         "app.kubernetes.io/instance=<pool>,app.kubernetes.io/component=rollout,
//                    sluice.dev/pool=<pool>" (the scale subresource's labelSelectorPath; <pool>
//                    is LabelValue(name), as on the replicas)
//   regions          one entry per spec.placement region in spec order {name, replicas, ready,
//                    pending (phase Pending)}; without spec.placement one entry "default"
//                    counting every replica
//   policies         one entry per spec.policies name (spec order): version = lowest version any
//                    Ready, non-draining replica reports, latestVersion = highest version any
//                    replica reports; each omitted while no replica reports one
//   tokensPerSecond  sum of the workers' tokens_per_second
//   lastScaleTime    kept from the pool's current status (the autoscaler writes it)
//   observedGeneration, conditions
//
// Conditions (observedGeneration = metadata.generation; lastTransitionTime per SetCondition):
//   Available       True  MinimumReplicasAvailable  readyReplicas >= 1, or spec.replicas == 0
//                   False NoReplicasReady
//   Progressing     True  RollingUpdate      updatedReplicas < replicas
//                   True  ScalingReplicaSet  replicas != spec.replicas
//                   True  Rebalancing        a region's replicas differ from its target
//                                            (with spec.placement and non-empty `targets`)
//                   False NewReplicaSetAvailable  none of the above
//   RegionDegraded  True  InsufficientCapacity   the pool settled: replicas fit in no region
//                                                (refused, or at maxReplicas; `settled_message`,
//                                                placement/capacity_refusals.h)
//                   True  ReplicasUnschedulable  some non-draining replica is Pending and
//                                                Unschedulable (message names regions, counts
//                                                and any unplaced replicas)
//                   True  InsufficientCapacity   only unplaced > 0 (every region at maxReplicas)
//                   False AllReplicasPlaced
// Every other condition in `old_conditions` is kept untouched, except the autoscaler's
// ScalingActive and ScalingLimited, which are kept only while spec.autoscaling is set (a pool
// whose autoscaling was removed would otherwise report a stale decision forever).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/meta.h"
#include "common/clock.h"
#include "operator/placement/capacity_refusals.h"
#include "operator/placement/region_targets.h"
#include "operator/placement/spillover.h"

namespace sluice::controllers {

// Region name in status when the pool has no spec.placement.
inline constexpr char kDefaultRegionName[] = "default";

// What the controller observed of one replica Pod and its worker.
struct ReplicaObservation {
  std::string name;       // Pod name.
  std::string region;     // sluice.dev/region label; "" without placement.
  int index = 0;          // sluice.dev/replica-index label.
  std::string phase;      // Pod status.phase ("Pending", "Running", ...).
  bool ready = false;     // Pod Ready condition True.
  bool current = false;   // Template hash matches PoolTemplateHash (ReplicaPodMatches).
  bool draining = false;  // Chosen to leave (being drained or deleted).
  bool pending_unschedulable = false;  // Pending with PodScheduled=False, reason Unschedulable.
  // The worker's GET /v1/status reply (rolloutpool/desired_pods.h), when it answered.
  std::optional<nlohmann::json> worker_status;
};

// The label selector of `pool`'s replica Pods, in string form.
std::string PoolSelector(const std::string& pool);

// The whole status object of `pool` (see above). `targets` and `unplaced` are the placement plan
// the controller is working towards (placement/region_targets.h; empty and 0 without placement).
// `settled_message` is SettledMessage's text when the plan settled, "" otherwise.
nlohmann::json PoolStatus(const nlohmann::json& pool,
                          const std::vector<ReplicaObservation>& replicas,
                          const std::vector<placement::RegionTarget>& targets, int64_t unplaced,
                          const std::vector<api::Condition>& old_conditions, Clock::WallTime now,
                          const std::string& settled_message = "");

// Why a settled pool's replicas wait (the InsufficientCapacity condition and Warning event): how
// many replicas wait for a node and, per refused region by name, the scheduler's reason.
std::string SettledMessage(const placement::Refusals& refusals,
                           const std::vector<placement::ReplicaFacts>& replicas);

}  // namespace sluice::controllers
