// WorkloadController: the local cluster's Deployment and ReplicaSet controllers (apps/v1), so a
// Helm chart's Deployment gets its ReplicaSets and pods and `kubectl rollout status` works.
//
// Each Sync() pass decides with the pure functions of deployment_sync.h and replica_set_sync.h
// over the informers' caches, then writes through the API:
//   - Deployments: adopt/release ReplicaSets (Update), create the new ReplicaSet, update
//     (PUT, resourceVersion-guarded) scaled or re-annotated ones, delete surplus history, set the
//     revision annotation (merge patch), write status (merge patch on the status subresource).
//     Events on the Deployment as kube's deployment-controller: ScalingReplicaSet
//     ("Scaled up replica set web-5d8f7c from 0 to 3"), ReplicaSetCreateError, SelectingAll.
//   - ReplicaSets: adopt/release pods, create pods from the template (generateName: the API
//     server names them), delete excess pods (uid precondition) and terminal ones (grace 0),
//     write status. Events as kube's replicaset-controller: SuccessfulCreate ("Created pod:
//     web-5d8f7c-abcde"), SuccessfulDelete ("Deleted pod: ..."), FailedCreate, FailedDelete
//     (these two also set the ReplicaFailure condition).
// A write that fails (a 409 Conflict from a concurrent change, anything else) ends that object's
// pass; the next pass re-reads. What the controller wrote is awaited in the caches (kube's
// "expectations"): a ReplicaSet creates or deletes no more pods, and a Deployment takes no
// further step, until the informers show its earlier writes (or `expectation_timeout` passes,
// for a lost watch event), so a lagging cache never makes it act twice.
//
// Ownership: owns its informers (deployments, replicasets, and pods unless a shared pods
// informer is given); the caller runs them (Informer::Run on its threads) and calls Sync
// periodically. `rest`, the shared pods informer and the clock must outlive the controller.
// Thread safety: Sync from one thread at a time; informers() and HasSynced() from any.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "localcluster/node/deployment_sync.h"
#include "localcluster/node/replica_set_sync.h"

namespace sluice::node {

struct WorkloadControllerOptions {
  // A pods informer over all namespaces to share (the node agent's); null: the controller makes
  // its own (returned by informers()).
  const kube::Informer* pods = nullptr;
  Clock* clock = nullptr;  // Null: the system clock.
  // How long a write is awaited in the caches before the controller acts regardless.
  std::chrono::milliseconds expectation_timeout{30000};
  size_t burst_replicas = 500;  // Pods created or deleted per ReplicaSet per pass.
};

class WorkloadController {
 public:
  explicit WorkloadController(kube::RestClient& rest, WorkloadControllerOptions options = {});
  WorkloadController(const WorkloadController&) = delete;
  WorkloadController& operator=(const WorkloadController&) = delete;

  // The informers this controller owns, for the caller to run and wait on.
  std::vector<kube::Informer*> informers() const;
  // Whether every informer it reads (the shared pods one included) has synced.
  bool HasSynced() const;

  // One pass over every Deployment, then every ReplicaSet. Does nothing until HasSynced().
  void Sync();

 private:
  // A write not yet seen in an informer's cache.
  struct Awaited {
    enum class Kind { kCreated, kUpdated, kDeleted };
    Kind kind;
    const kube::Informer* informer;
    std::string key;                 // "<namespace>/<name>".
    std::string uid;                 // kDeleted: the object that must go.
    std::vector<std::string> stale;  // kUpdated: resourceVersions the cache must move past.
    // What waits: "deployment/<uid>" (its pass), "rs/<uid>" (its pod creates and deletes) or
    // "rs-status/<uid>" (its next status write).
    std::string owner;
    Clock::MonoTime deadline;
  };

  void SyncDeployment(const nlohmann::json& deployment,
                      const std::vector<nlohmann::json>& replica_sets,
                      const std::vector<nlohmann::json>& pods, Clock::WallTime now);
  void SyncReplicaSet(const nlohmann::json& replica_set, const std::vector<nlohmann::json>& pods,
                      Clock::WallTime now);
  void Await(Awaited::Kind kind, const kube::Informer* informer, const nlohmann::json& object,
             std::vector<std::string> stale, const std::string& owner);
  void PruneAwaited();
  bool Waiting(const std::string& owner) const;
  // Merge-patches the status subresource from `old_status` to `status` (fields dropped are
  // nulled). Returns the written object.
  Result<nlohmann::json> WriteStatus(kube::ResourceClient& client, const std::string& name,
                                     const nlohmann::json& old_status,
                                     const nlohmann::json& status);
  void Event(kube::EventRecorder& recorder, const nlohmann::json& object, const char* kind,
             const std::string& type, const std::string& reason, const std::string& message);
  void LogWriteError(const char* what, const nlohmann::json& object, const Status& status);

  WorkloadControllerOptions options_;
  Clock& clock_;
  log::Logger log_;
  kube::DynamicClient client_;
  kube::EventRecorder deployment_events_;
  kube::EventRecorder replica_set_events_;
  std::unique_ptr<kube::Informer> deployments_, replica_sets_, own_pods_;
  const kube::Informer* pods_;
  std::vector<Awaited> awaited_;  // Sync's thread only.
};

}  // namespace sluice::node
