// The TrainerJob controller: a gang of rank pods that start together, restart together, and end
// the job when rank 0 reports the last step (docs/operator.md, "TrainerJob").
//
// One reconcile: leave the job alone when spec.managedBy names another controller (Kueue's
// MultiKueue dispatches it elsewhere); validate (InvalidSpec); find the Policy and Dataflow
// (PolicyNotFound / DataflowNotFound, re-checked when they appear); keep the headless Service and
// the config ConfigMap; then by phase:
//   - suspended (runPolicy.suspend): delete the ranks, phase Suspended, condition Suspended;
//   - finished: delete ranks still running, once every RolloutPool hosting the policy holds the
//     final version (or kFinalWeightsGrace passed; final_weights.h), since rank 0 is where
//     replicas fetch it; after ttlSecondsAfterFinished delete the job;
//   - otherwise: the current attempt's ranks (label sluice.dev/attempt = status.restarts) are
//     created together; a rank that failed, or vanished, restarts the whole gang (all ranks
//     deleted, restarts + 1, event GangRestarted) until runPolicy.backoffLimit, then Failed with
//     BackoffLimitExceeded; a rank pending unschedulable longer than the gang timeout gives
//     Admitted=False/GangPending; activeDeadlineSeconds gives Failed/DeadlineExceeded; rank 0's
//     GET /v1/status supplies step, version and lastMetrics, and its reaching spec.steps (or
//     rank 0 exiting 0) completes the job: phase Succeeded, Complete=True; rank 0 reporting
//     phase Starved (its Dataflow ran out of data first) ends it: Starved=True/DataflowDrained,
//     phase Failed, Failed=True/DataExhausted (data_exhaustion.h).
//
// Ownership: borrows the client, informers and recorder. Thread safety: Reconcile may run
// concurrently for different keys.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/dataflow_children.h"

namespace sluice::controllers {

inline constexpr char kOperatorManagedBy[] = "sluice.dev/operator";

struct TrainerJobControllerOptions {
  WorkerImages images;
  std::chrono::milliseconds status_period{5000};
  std::chrono::milliseconds worker_timeout{2000};
  // A rank Pending+Unschedulable this long makes the job Admitted=False/GangPending.
  std::chrono::seconds gang_timeout{120};
};

struct TrainerJobInformers {
  kube::Informer* jobs = nullptr;
  kube::Informer* pods = nullptr;
  kube::Informer* services = nullptr;
  kube::Informer* config_maps = nullptr;
  kube::Informer* policies = nullptr;
  kube::Informer* dataflows = nullptr;
  // The Dataflow's token Secret: rank 0 requires the bearer token on /v1/status. May be null
  // (the report is then asked for without one).
  kube::Informer* secrets = nullptr;
  // RolloutPools: a finished job's rank 0 serves its final weights until every pool hosting the
  // policy holds them (final_weights.h). May be null (the ranks are then deleted at once).
  kube::Informer* pools = nullptr;
};

class TrainerJobController {
 public:
  TrainerJobController(kube::DynamicClient& client, TrainerJobInformers informers,
                       kube::EventRecorder& events, TrainerJobControllerOptions options);

  Result<ReconcileResult> Reconcile(const std::string& key);

  // The jobs that reference a Policy or Dataflow (`field` "policyRef" or "dataflowRef").
  std::vector<std::string> JobsReferencing(const nlohmann::json& object,
                                           const std::string& field) const;

 private:
  kube::DynamicClient& client_;
  TrainerJobInformers informers_;
  kube::EventRecorder& events_;
  TrainerJobControllerOptions options_;
};

}  // namespace sluice::controllers
