// The Deployment controller's decisions for the local cluster (what kube's deployment controller
// does in one sync of one Deployment), as a pure function the workload controller applies.
//
// ReplicaSets: those whose controller ownerReference has the Deployment's uid; orphans its
// selector matches are adopted, owned ones it no longer matches are released (as pods are in
// replica_set_sync.h). The new ReplicaSet is the oldest owned one whose pod template equals the
// Deployment's ignoring the pod-template-hash label (failing that, one labelled with the current
// template's hash, in case the API server stored the two templates differently); all others are
// old. Its name is "<deployment>-<hash>"; its selector, template labels and labels are the
// Deployment's plus pod-template-hash=<hash>.
//
// One pass, in kube's order:
//   - an empty selector: a SelectingAll warning, only observedGeneration is written;
//   - being deleted: status only;
//   - paused (spec.paused): Progressing becomes Unknown/DeploymentPaused (DeploymentResumed on
//     resume); no new ReplicaSet and no rollout step, but replica changes still scale the
//     ReplicaSets (below) and surplus history is cleaned up;
//   - a scaling event (an active ReplicaSet annotated with another desired replica count):
//     the change is applied proportionally to the active ReplicaSets (RollingUpdate) or to the
//     only active one, and status is written without touching Progressing;
//   - RollingUpdate: create the new ReplicaSet if missing (already scaled to what the surge
//     allows), scale it up within spec.replicas + maxSurge pods in total, then scale old ones
//     down keeping spec.replicas - maxUnavailable available (unhealthy old replicas first,
//     oldest ReplicaSets first); once complete, delete old ReplicaSets with no replicas beyond
//     spec.revisionHistoryLimit (lowest revisions first);
//   - Recreate: scale every old ReplicaSet to 0; only when none of their pods is left (pods not
//     Succeeded/Failed, being deleted included) create the new one at spec.replicas.
// maxSurge rounds percentages up, maxUnavailable down; when both resolve to 0 maxUnavailable is 1
// (kube's fencepost). Explicit 0/0, or values that do not parse, are invalid (the API server
// rejects them) and are treated as the defaults 25%/25%. Absent fields take kube's defaults
// (replicas 1, RollingUpdate, revisionHistoryLimit 10, progressDeadlineSeconds 600).
//
// Status (kube's calculateStatus and syncRolloutStatus): observedGeneration = generation,
// replicas / readyReplicas / availableReplicas the sums over all ReplicaSets' statuses,
// updatedReplicas the new ReplicaSet's status.replicas, unavailableReplicas = the sum of
// spec.replicas (after this pass's scaling) - availableReplicas (not below 0), collisionCount
// kept. Conditions:
//   Available  True MinimumReplicasAvailable "Deployment has minimum availability." when
//              availableReplicas >= spec.replicas - maxUnavailable, else False
//              MinimumReplicasUnavailable "Deployment does not have minimum availability.";
//   Progressing True NewReplicaSetCreated `Created new replica set "X"` /
//              FoundNewReplicaSet `Found new replica set "X"` (no condition yet) /
//              ReplicaSetUpdated `ReplicaSet "X" is progressing.` (on progress: more updated,
//              ready or available replicas, or fewer old ones; lastUpdateTime moves) /
//              NewReplicaSetAvailable `ReplicaSet "X" has successfully progressed.` (updated ==
//              replicas == available == spec.replicas); False ProgressDeadlineExceeded
//              `ReplicaSet "X" has timed out progressing.` when lastUpdateTime +
//              progressDeadlineSeconds is before `now` without completing;
//   ReplicaFailure copied from the new (else any) ReplicaSet's ReplicaFailure condition.
// Condition times are `now` (seconds), kept when the status and reason do not change (the
// transition time is kept when only the reason does).
//
// ReplicaSet annotations written: deployment.kubernetes.io/revision (max old revision + 1 on the
// new ReplicaSet; a reused template's old revision goes to .../revision-history),
// .../desired-replicas and .../max-replicas (spec.replicas and + maxSurge, on every scaled
// ReplicaSet), and the Deployment's own annotations (except kubectl's last-applied and these).
// The Deployment gets deployment.kubernetes.io/revision = the new ReplicaSet's revision.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "localcluster/node/pod_template_hash.h"

namespace sluice::node {

inline constexpr char kRevisionAnnotation[] = "deployment.kubernetes.io/revision";
inline constexpr char kRevisionHistoryAnnotation[] = "deployment.kubernetes.io/revision-history";
inline constexpr char kDesiredReplicasAnnotation[] = "deployment.kubernetes.io/desired-replicas";
inline constexpr char kMaxReplicasAnnotation[] = "deployment.kubernetes.io/max-replicas";

// A ReplicaSet to write back (Update: its metadata.resourceVersion is the precondition, so a
// concurrent change conflicts and the next pass re-reads).
struct ReplicaSetChange {
  nlohmann::json object;  // With spec.replicas, annotations and minReadySeconds as they should be.
  int64_t from = 0;       // spec.replicas as read.
  int64_t to = 0;         // spec.replicas written; from != to: a ScalingReplicaSet event.
};

struct DeploymentEvent {
  std::string type;  // "Normal" or "Warning".
  std::string reason;
  std::string message;
};

struct DeploymentPlan {
  std::string template_hash;  // pod-template-hash of the current template.
  // Orphan ReplicaSets with the Deployment's controller reference added / owned ones the
  // selector no longer matches with it removed; Update them before anything else.
  std::vector<nlohmann::json> adopt;
  std::vector<nlohmann::json> release;
  // The new ReplicaSet to create (its spec.replicas already the first step's); then a
  // ScalingReplicaSet event "Scaled up replica set X from 0 to N" when N > 0.
  std::optional<nlohmann::json> create;
  // ReplicaSets to update, in order (the new one before old ones when both change).
  std::vector<ReplicaSetChange> updates;
  // Old ReplicaSets beyond revisionHistoryLimit (no replicas); delete them.
  std::vector<nlohmann::json> delete_replica_sets;
  // The value to set the Deployment's revision annotation to, when it changes.
  std::optional<std::string> revision;
  // The Deployment's whole status after the pass, and whether it differs from the stored one.
  nlohmann::json status;
  bool status_changed = false;
  std::vector<DeploymentEvent> events;  // Beyond the scaling ones the caller derives.
};

// Decides one pass for `deployment` given the ReplicaSets and pods of its namespace (others are
// ignored). Pods are only looked at for Recreate (old pods still running). `now`: wall time.
DeploymentPlan SyncDeployment(const nlohmann::json& deployment,
                              const std::vector<nlohmann::json>& replica_sets,
                              const std::vector<nlohmann::json>& pods, Clock::WallTime now);

// kube's event message for a ScalingReplicaSet event:
// "Scaled up replica set web-5d8f7c from 0 to 3" / "Scaled down replica set ... from 3 to 2".
std::string ScalingMessage(const std::string& replica_set, int64_t from, int64_t to);

// maxSurge and maxUnavailable of `deployment` resolved against spec.replicas (see the header
// comment); both 0 for Recreate. maxUnavailable is at most spec.replicas.
int64_t MaxSurge(const nlohmann::json& deployment);
int64_t MaxUnavailable(const nlohmann::json& deployment);

// The status to write when creating the new ReplicaSet failed with `error` (not AlreadyExists):
// Progressing False ReplicaSetCreateError `Failed to create new replica set "X": <error>`, the
// rest of the Deployment's status as stored. The caller also records a Warning event
// ReplicaSetCreateError with that message.
nlohmann::json StatusAfterCreateFailure(const nlohmann::json& deployment,
                                        const std::string& replica_set, const std::string& error,
                                        Clock::WallTime now);

}  // namespace sluice::node
