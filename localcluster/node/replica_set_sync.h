// The ReplicaSet controller's decisions for the local cluster (what kube's replicaset controller
// does in one sync of one ReplicaSet), as a pure function the workload controller applies.
//
// - Pods it owns: those whose controller ownerReference has the ReplicaSet's uid. Orphans (no
//   controller reference) in its namespace that its selector matches, that are not terminal and
//   not being deleted, are adopted (the controller reference added) and counted; owned pods the
//   selector no longer matches are released (our reference removed) and not counted. Nothing is
//   adopted or released while the ReplicaSet is being deleted or when its selector is invalid
//   or empty.
// - Active pods: owned, not terminal (Succeeded/Failed) and not being deleted. Only they count
//   toward spec.replicas, as in kube, so a pod being deleted is replaced at once.
// - Terminal owned pods are deleted (kube leaves them to its pod garbage collector; the local
//   cluster has none, and an evicted pod on a lost node would otherwise stay forever). They are
//   counted nowhere, so a replacement is created in the same pass.
// - Too few active pods: `create` pods from spec.template (at most `burst` per pass). Too many:
//   the excess, chosen by kube's ranking (PodsToDelete). Neither while the ReplicaSet is being
//   deleted, nor with `manage` false (the caller's earlier creates or deletes are not yet in its
//   cache: acting again would overshoot).
// - Status: replicas (active pods), fullyLabeledReplicas (active pods carrying every template
//   label), readyReplicas, availableReplicas (Ready for more than spec.minReadySeconds before
//   `now`), observedGeneration (metadata.generation); a ReplicaFailure condition is removed (the
//   caller sets it with SetReplicaFailure when a create or delete fails). Other status fields are
//   kept.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"

namespace sluice::node {

struct ReplicaSetSyncOptions {
  // False while earlier creates or deletes are unobserved: only status (and adoption) is decided.
  bool manage = true;
  // At most this many pods are created or deleted in one pass (kube's burstReplicas).
  size_t burst = 500;
};

struct ReplicaSetPlan {
  // Create this many pods, each a separate Create of `pod` (the API server names them).
  int64_t create = 0;
  // The pod to create (set when create > 0): apiVersion v1, kind Pod, metadata.generateName
  // "<rs>-", the namespace, the template's labels, annotations and finalizers, ownerReferences
  // [the ReplicaSet as controller, blockOwnerDeletion], spec = the template's spec.
  nlohmann::json pod;
  // Active pods to delete (normal grace), victims first.
  std::vector<nlohmann::json> delete_pods;
  // Terminal owned pods to delete (nothing runs: grace period 0).
  std::vector<nlohmann::json> delete_terminal;
  // Pods as they should be written back (Update, so a concurrent change conflicts): orphans with
  // the ReplicaSet's controller reference added, and owned pods with it removed.
  std::vector<nlohmann::json> adopt;
  std::vector<nlohmann::json> release;
  // The ReplicaSet's whole status for this pass, and whether it differs from the stored one
  // (zero counts and absent ones compare equal).
  nlohmann::json status;
  bool status_changed = false;
};

// Decides one pass for `replica_set` given the pods of its namespace (pods of other namespaces
// are ignored; passing them is harmless). `now` is wall-clock time, for minReadySeconds.
ReplicaSetPlan SyncReplicaSet(const nlohmann::json& replica_set,
                              const std::vector<nlohmann::json>& pods, Clock::WallTime now,
                              const ReplicaSetSyncOptions& options = {});

// The first `count` of `pods` in kube's order of deletion (ActivePodsWithRanks):
//   1. not yet scheduled (no spec.nodeName) before scheduled;
//   2. Pending (or no phase) before Unknown before Running;
//   3. not Ready before Ready;
//   4. more of these pods on the same node before fewer (spreads what remains);
//   5. when both are Ready, Ready more recently before longer ago (a Ready pod without a
//      transition time first);
//   6. more container restarts (the most of any container) before fewer;
//   7. created more recently before earlier (no creationTimestamp first);
//   8. by name, so the choice is deterministic.
// kube's logarithmic bucketing of times (LogarithmicScaleDown) is not applied: times compare
// exactly. Callers pass active pods only.
std::vector<nlohmann::json> PodsToDelete(const std::vector<nlohmann::json>& pods, size_t count);

// The pod a ReplicaSet creates from its spec.template (see ReplicaSetPlan::pod).
nlohmann::json PodFromTemplate(const nlohmann::json& replica_set);

// Sets the ReplicaFailure condition on a ReplicaSet status, as kube does when creating or
// deleting pods fails: status True, `reason` FailedCreate or FailedDelete, `message` the error,
// lastTransitionTime `now` (kept when the condition already says the same).
void SetReplicaFailure(nlohmann::json& status, const std::string& reason,
                       const std::string& message, Clock::WallTime now);

}  // namespace sluice::node
