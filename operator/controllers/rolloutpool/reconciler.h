// The RolloutPool controller: one Pod per replica, placed over regions, drained before it
// leaves, replaced when it fails or its template changes, scaled by Prometheus metrics
// (docs/operator.md, "RolloutPool").
//
// One reconcile gathers facts, asks the pure plan (plan.h) what to do, and does it:
//   1. the finalizer sluice.dev/drain is added;
//   2. unless the pool is being deleted: the spec is validated (InvalidSpec), the Dataflow it
//      names looked up (DataflowNotFound), the worker config (the hosted Policies) written, and
//      an external engine's Policy checked (PolicyNotFound, UnservableModel);
//   3. the replicas' facts are gathered (replica_facts.h), with what each ready worker reports on
//      GET /v1/status (worker_client.h);
//   4. with spec.autoscaling, every syncPeriodSeconds the metrics are queried and the decision
//      (operator/autoscale) is written to spec.replicas through the scale subresource;
//   5. the placement plan (operator/placement) gives the replicas each region should have, with
//      spill-over of replicas no region has room for;
//   6. Plan decides the drains, deletions, creations (with exponential back-off for replicas
//      that keep failing), rolling update and weight relays, and the reconciler carries them out;
//      a pool being deleted drains every replica and then removes its finalizer;
//   7. status (status.h) is written when it changed.
//
// Metrics (rolloutpool/metrics.h), with options.registry: the replica counts are set when
// status is computed (6), the autoscaler's at each sync (5); a pool's series are removed once it
// is being deleted and again when it is gone.
//
// Ownership: borrows the client, informers, recorder and registry. Thread safety: Reconcile may run
// concurrently for different keys.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/autoscale/recommendation.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/rolloutpool/metrics.h"
#include "operator/controllers/rolloutpool/plan.h"
#include "operator/controllers/rolloutpool/worker_client.h"

namespace sluice::controllers {

inline constexpr char kDrainFinalizer[] = "sluice.dev/drain";

struct RolloutPoolControllerOptions {
  WorkerImages images;
  std::string prometheus_url;  // Default for spec.autoscaling.prometheusURL.
  std::chrono::milliseconds status_period{5000};
  std::chrono::milliseconds worker_timeout{2000};
  Clock* clock = nullptr;  // Null: the system clock. Wall time stamps; monotonic time back-offs.
  metrics::Registry* registry = nullptr;  // Null: no sluice_rolloutpool_* / autoscaler metrics.
};

struct RolloutPoolInformers {
  kube::Informer* pools = nullptr;
  kube::Informer* pods = nullptr;
  kube::Informer* dataflows = nullptr;
  kube::Informer* secrets = nullptr;
  kube::Informer* policies = nullptr;     // The hosted Policies (rollout.json); may be null.
  kube::Informer* config_maps = nullptr;  // The pool's ConfigMap; may be null (none is made).
};

class RolloutPoolController {
 public:
  RolloutPoolController(kube::DynamicClient& client, RolloutPoolInformers informers,
                        kube::EventRecorder& events, RolloutPoolControllerOptions options);
  ~RolloutPoolController();

  Result<ReconcileResult> Reconcile(const std::string& key);

  // The pools that host a Policy (for Controller::Watch on Policies).
  std::vector<std::string> PoolsOfPolicy(const nlohmann::json& policy) const;

  // The pools that reference a Dataflow (for Controller::Watch on Dataflows).
  std::vector<std::string> PoolsOfDataflow(const nlohmann::json& dataflow) const;

  // The pools' metrics; null without options.registry.
  RolloutPoolMetrics* metrics() const { return metrics_.get(); }

 private:
  struct PoolState;
  struct Blocked {  // Why the pool cannot run: the Available=False condition's reason and message.
    std::string reason;
    std::string message;
  };
  struct Placed {  // The placement plan of this reconcile.
    std::vector<placement::RegionTarget> targets;
    int64_t unplaced = 0;
    std::set<std::string> spilled;
    std::string settled_message;  // SettledMessage when the plan settled, "" otherwise.
  };

  PoolState& State(const std::string& key);
  // What calls to the replicas carry: the pool's control token, the namespace's CA, the name to
  // verify.
  rolloutpool::WorkerCredentials Credentials(const nlohmann::json& pool) const;
  // The pool's replica Pods, from the owner-uid index.
  Result<std::vector<nlohmann::json>> OwnedPods(const nlohmann::json& pool) const;
  // The replicas' facts, with their workers' reports; forgets force-deleted uids that are gone.
  std::vector<rolloutpool::Replica> Observe(const std::vector<nlohmann::json>& pods,
                                            const std::string& template_hash,
                                            const rolloutpool::WorkerCredentials& creds,
                                            int64_t abandon_after, PoolState& state);
  // The hosted Policies and the worker config; a reason the pool is blocked, if any.
  Result<std::optional<Blocked>> ResolvePolicies(const nlohmann::json& pool, PoolState& state,
                                                 std::vector<nlohmann::json>* hosted);
  // Writes Available=False with `blocked` (and an Event when it changed).
  Status WriteBlocked(const nlohmann::json& pool, const Blocked& blocked);
  // Queries the metrics when a sync is due and scales; the replicas to plan for and when the
  // next sync is due.
  Result<int64_t> Autoscale(const nlohmann::json& pool, PoolState& state,
                            std::optional<std::chrono::milliseconds>* next_sync);
  Placed Place(const nlohmann::json& pool, PoolState& state,
               const std::vector<rolloutpool::Replica>& replicas, const std::string& hash);
  // Carries out `actions` (plan.h) on the pool's Pods.
  Status Execute(const nlohmann::json& pool, const std::vector<rolloutpool::Action>& actions,
                 const std::vector<rolloutpool::Replica>& replicas,
                 const std::vector<nlohmann::json>& pods, const std::vector<nlohmann::json>& hosted,
                 const nlohmann::json* dataflow, const rolloutpool::WorkerCredentials& creds,
                 PoolState& state);
  // Status from the replicas and the placement plan, written when it changed.
  Status WriteStatus(const nlohmann::json& pool, PoolState& state,
                     const std::vector<rolloutpool::Replica>& replicas, const Placed& placed);
  int64_t NowSeconds() const;

  kube::DynamicClient& client_;
  RolloutPoolInformers informers_;
  kube::EventRecorder& events_;
  RolloutPoolControllerOptions options_;
  std::unique_ptr<RolloutPoolMetrics> metrics_;
  Clock& clock_;
  rolloutpool::WorkerClient workers_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<PoolState>> states_;
};

}  // namespace sluice::controllers
