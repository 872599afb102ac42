// The RolloutPool controller: one Pod per replica, placed over regions, drained before it
// leaves, replaced when it fails or its template changes, scaled by Prometheus metrics
// (docs/operator.md, "RolloutPool").
//
// One reconcile:
//   1. the finalizer sluice.dev/drain is added; a pool being deleted drains every replica and then
//      removes it (and the finalizer);
//   2. the spec is validated (InvalidSpec) and the Dataflow it names looked up (DataflowNotFound);
//   3. the replicas' facts are gathered: Ready, Pending+Unschedulable and since when, draining, and
//      the in-flight work each ready worker reports on GET /v1/status;
//   4. the placement plan (operator/placement) gives the replicas each region should have: the
//      surplus is chosen (least loaded first) and drained (POST /v1/drain, then deleted once the
//      worker reports drained or spec.drain.gracePeriodSeconds passed), missing replicas are
//      created (with exponential back-off for replicas that keep failing), ended pods deleted,
//      and pods of an old template replaced one region at a time within
//      spec.updateStrategy.maxUnavailable;
//   5. with spec.autoscaling, every syncPeriodSeconds the metrics are queried and the decision
//      (operator/autoscale) is written to spec.replicas through the scale subresource;
//   6. status (rolloutpool/status.h) is written when it changed.
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
#include <string>

#include "common/http/client.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/autoscale/recommendation.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/dataflow_children.h"
#include "operator/controllers/rolloutpool/metrics.h"

namespace sluice::controllers {

inline constexpr char kDrainFinalizer[] = "sluice.dev/drain";
// Set on a replica pod when it was asked to drain (RFC 3339).
inline constexpr char kDrainingSinceAnnotation[] = "sluice.dev/draining-since";

struct RolloutPoolControllerOptions {
  WorkerImages images;
  std::string prometheus_url;  // Default for spec.autoscaling.prometheusURL.
  std::chrono::milliseconds status_period{5000};
  std::chrono::milliseconds worker_timeout{2000};
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
  PoolState& State(const std::string& key);
  Result<nlohmann::json> WorkerStatus(const nlohmann::json& pod, const std::string& token);
  // A client of a replica's HTTP port (bearer `token`, the worker timeout, no retries).
  Result<std::unique_ptr<http::Client>> WorkerClient(const nlohmann::json& pod,
                                                     const std::string& token) const;
  Status PostDrain(const nlohmann::json& pod, const std::string& token);
  // POST /v1/relay {"url": relay} to a replica ("" makes it its region's relay).
  Status PostRelay(const nlohmann::json& pod, const std::string& token, const std::string& relay);
  std::string Token(const std::string& ns, const std::string& dataflow) const;

  kube::DynamicClient& client_;
  RolloutPoolInformers informers_;
  kube::EventRecorder& events_;
  RolloutPoolControllerOptions options_;
  std::unique_ptr<RolloutPoolMetrics> metrics_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<PoolState>> states_;
};

}  // namespace sluice::controllers
