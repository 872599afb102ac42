// The TrainerJob controller: a gang of rank pods that start together, restart together, and end
// the job when rank 0 reports the last step (docs/operator.md, "TrainerJob").
//
// One reconcile leaves the job alone when spec.managedBy names another controller (Kueue's
// MultiKueue dispatches it elsewhere); validates (InvalidSpec) and finds the Policy and Dataflow
// (PolicyNotFound / DataflowNotFound, re-checked when they appear); gathers the facts
// (job_facts.h: the rank Pods; while the job runs, rank 0's GET /v1/status; for a succeeded job,
// the RolloutPools still lacking its final weights, final_weights.h); asks the pure plan
// (plan.h, which holds the rules: finishing, suspension, gang start and restart, the backoff
// limit, the deadline, data exhaustion) for a verdict; and carries it out: keeps the headless
// Service and the config ConfigMap of a job that runs, deletes and creates rank Pods, folds rank
// 0's report into status (rank_report.h), and writes status, conditions and Events (phases
// Pending, Running, Suspended, Succeeded with Complete=True, Failed with Failed=True and the
// reason: BackoffLimitExceeded, DeadlineExceeded, DataExhausted with Starved=True).
//
// Ownership: borrows the client, informers and recorder. Thread safety: Reconcile may run
// concurrently for different keys.
//
// A cache that lags the controller's own writes is not acted on: status patches carry the job's
// resourceVersion (a stale read gets 409 and is retried, so a restart count is never written
// back), and after a gang restart the job is not reconciled until the cache shows the new
// attempt (a lagging cache would otherwise start the old attempt's ranks again).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/trainerjob/plan.h"

namespace sluice::controllers {

inline constexpr char kOperatorManagedBy[] = "sluice.dev/operator";

struct TrainerJobControllerOptions {
  WorkerImages images;
  std::chrono::milliseconds status_period{5000};
  std::chrono::milliseconds worker_timeout{2000};
  // A rank Pending+Unschedulable this long makes the job Admitted=False/GangPending.
  std::chrono::seconds gang_timeout{120};
  Clock* clock = nullptr;  // Null: the system clock.
};

struct TrainerJobInformers {
  kube::Informer* jobs = nullptr;
  kube::Informer* pods = nullptr;
  kube::Informer* services = nullptr;
  kube::Informer* config_maps = nullptr;
  kube::Informer* policies = nullptr;
  kube::Informer* dataflows = nullptr;
  // Secrets: the Dataflow's token (rank 0 requires the bearer token on /v1/status), the
  // namespace's CA and the ranks' serving certificate (namespace_certificates.h). Required.
  kube::Informer* secrets = nullptr;
  // RolloutPools: a finished job's rank 0 serves its final weights until every pool hosting the
  // policy holds them (final_weights.h). May be null (the ranks are then deleted at once).
  kube::Informer* pools = nullptr;
  // NetworkPolicies: each job's gang policy (network_policies.h). May be null (no gang policies,
  // as the Dataflow controller makes none without its informer).
  kube::Informer* network_policies = nullptr;
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
  class StatusEditor;
  // One reconcile; Reconcile retries its conflicts.
  Result<ReconcileResult> Sync(const std::string& key);
  // The job's rank Pods, from the owner-uid index.
  Result<std::vector<nlohmann::json>> OwnedPods(const nlohmann::json& job) const;
  // Rank 0's GET /v1/status reply; null when rank 0 does not run or did not answer.
  nlohmann::json AskRankZero(const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
                             const trainerjob::JobFacts& facts) const;
  // The RolloutPools in the job's namespace hosting `policy` that lack `final_version`.
  std::vector<std::string> LaggingPools(const std::string& ns, const std::string& policy,
                                        int64_t final_version) const;
  // Deletes `names` (reported as one DeletedRanks Event naming `why`).
  Status DeleteRanks(const nlohmann::json& job, const std::vector<std::string>& names,
                     const std::string& why);
  // The headless Service, the config ConfigMap and the serving certificate every rank uses.
  Status EnsureChildren(const nlohmann::json& job, const nlohmann::json& policy,
                        const nlohmann::json& dataflow);
  // Carries out `plan` (plan.h).
  Result<ReconcileResult> Apply(const nlohmann::json& job, const trainerjob::JobPlan& plan,
                                const nlohmann::json& report, const nlohmann::json& policy,
                                const nlohmann::json& dataflow, StatusEditor& status);

  kube::DynamicClient& client_;
  TrainerJobInformers informers_;
  kube::EventRecorder& events_;
  // True when the cached job predates a gang restart this controller wrote (same uid, fewer
  // restarts); forgets the job once the cache shows it.
  bool CacheLagsRestart(const std::string& key, const nlohmann::json& job);
  void RememberRestart(const std::string& key, const nlohmann::json& job, int64_t restarts);

  TrainerJobControllerOptions options_;
  Clock& clock_;
  std::mutex restarts_mu_;
  // Key -> (uid, restarts written) of gang restarts the job cache does not show yet.
  std::map<std::string, std::pair<std::string, int64_t>> restarts_written_;
};

}  // namespace sluice::controllers
