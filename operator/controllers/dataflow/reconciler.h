// The Dataflow controller: keeps each Dataflow's children (dataflow/desired_objects.h) in place and
// its status current (docs/operator.md, "Dataflow").
//
// One reconcile: read the Dataflow from the cache; validate its spec (InvalidSpec: Ready=False
// with the field messages, a Warning event, children untouched); create what is missing (the
// token Secret once, the WAL claim once, never updated), update the ConfigMap and Service when
// they differ, create or update the experiment's NetworkPolicies (network_policies.h; deleted
// when spec.networkPolicy.enabled is false, a failure is a NetworkPolicyFailed Warning event),
// replace the pod when its config hash is stale or it ended; then ask the ready pod's GET
// /v1/status (at its pod IP, with the experiment's token) and write status: the worker's counters,
// `endpoint`, and conditions Ready (the pod serves), Backpressure (admission full), Degraded (the
// worker reports failed tasks or cannot be asked) and Exhausted (the data ran out; events
// DatasetExhausted, then DataflowDrained per drained policy: data_exhaustion.h). It re-runs every
// `status_period` to keep the counters fresh.
//
// Ownership: borrows the client, informers and recorder, which must outlive it.
// Thread safety: Reconcile may run concurrently for different keys (the runner never runs one
// key twice at once).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/dataflow/desired_objects.h"

namespace sluice::controllers {

struct DataflowControllerOptions {
  WorkerImages images;
  std::chrono::milliseconds status_period{5000};
  std::chrono::milliseconds worker_timeout{3000};  // Of each GET /v1/status.
  Clock* clock = nullptr;  // Null: the system clock (condition times, the trajectory rate).
};

struct DataflowInformers {
  kube::Informer* dataflows = nullptr;
  kube::Informer* pods = nullptr;
  kube::Informer* services = nullptr;
  kube::Informer* config_maps = nullptr;
  kube::Informer* secrets = nullptr;
  kube::Informer* claims = nullptr;
  // The operator's NetworkPolicies; null: the controller leaves NetworkPolicies alone.
  kube::Informer* network_policies = nullptr;
};

class DataflowController {
 public:
  DataflowController(kube::DynamicClient& client, DataflowInformers informers,
                     kube::EventRecorder& events, DataflowControllerOptions options);

  Result<ReconcileResult> Reconcile(const std::string& key);

 private:
  Status EnsureChildren(const nlohmann::json& df, std::string* pod_state);
  Status EnsureNetworkPolicies(const nlohmann::json& df);
  // The namespace CA, the Dataflow's serving Secret and its CA ConfigMap (dataflow_tls.h),
  // made or renewed as needed (ensure_tls.cpp).
  Status EnsureTls(const nlohmann::json& df);
  nlohmann::json CurrentStatus(const nlohmann::json& df, const std::string& pod_state);
  Status WriteStatus(const nlohmann::json& df, nlohmann::json status);

  kube::DynamicClient& client_;
  DataflowInformers informers_;
  kube::EventRecorder& events_;
  DataflowControllerOptions options_;
  Clock& clock_;

  struct Sample {
    nlohmann::json status;
    Clock::MonoTime at;
  };
  std::mutex mu_;
  std::map<std::string, Sample> last_;  // By key: the previous status, for rates.
};

}  // namespace sluice::controllers
