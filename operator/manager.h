// Manager: the operator's caches and controllers, wired once, as controller-runtime's manager
// wires a Go operator's. The operator's main runs it under leader election; benches and tests
// use its caches and reconcilers directly.
//
// - Caches: one informer per kind the controllers read, over the watched namespaces: the Sluice
//   kinds, and only the operator's own children (label sluice.dev/managed-by) of the core kinds
//   (Pods, Services, ConfigMaps, Secrets, PersistentVolumeClaims, NetworkPolicies).
// - Reconcilers: Dataflow, RolloutPool, TrainerJob and Policy (operator/controllers/).
// - Controllers: one work queue per kind with the watches that map a changed object to the keys
//   to reconcile (owned children, referenced Policies and Dataflows, a Dataflow's token Secret).
//
// Ownership: `client` and `events` (and what they use) outlive the Manager.
// Thread safety: Run and StartCaches/JoinCaches are called from one thread; the reconcilers and
// informers are safe to use from several once the caches run.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/controllers/dataflow/reconciler.h"
#include "operator/controllers/policy/reconciler.h"
#include "operator/controllers/rolloutpool/reconciler.h"
#include "operator/controllers/trainerjob/reconciler.h"

namespace sluice::op {

struct ManagerOptions {
  // Watched namespaces (kube::ParseWatchNamespaces): {""} watches all of them.
  std::vector<std::string> namespaces = {""};
  // How often every cached object is reconciled again.
  std::chrono::milliseconds resync_period = std::chrono::minutes(10);
  controllers::WorkerImages images;
  // How often a running worker's status is refreshed into its object's status.
  std::chrono::milliseconds status_period = std::chrono::seconds(5);
  std::string prometheus_url;  // For RolloutPool autoscaling; empty: none.
  // A TrainerJob rank unschedulable this long makes the job Admitted=False/GangPending.
  std::chrono::seconds gang_timeout{120};
  // Objects of each kind reconciled at once.
  int dataflow_concurrency = 4;
  int rolloutpool_concurrency = 4;
  int trainerjob_concurrency = 4;
  int policy_concurrency = 2;
  metrics::Registry* registry = nullptr;  // Null: no metrics.
  log::Logger* logger = nullptr;          // Null: no log lines.
  // The controllers' and workqueues' time; null: the system clock. Tests pass a FakeClock.
  Clock* clock = nullptr;
};

class Manager {
 public:
  Manager(kube::DynamicClient& client, kube::EventRecorder& events, ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Runs the caches and, once they have synced, the controllers, until `stop`; returns when
  // everything has stopped. Called once.
  void Run(CancellationToken stop);

  // Without controllers (benches, tests): runs every informer on its own thread until `stop`
  // and returns once their caches have synced (true) or `stop` fired first (false). JoinCaches
  // waits for the threads after `stop`.
  bool StartCaches(CancellationToken stop);
  void JoinCaches();

  // True once the caches have synced (Run or StartCaches).
  bool caches_synced() const { return synced_.load(); }

  kube::Informer& rollout_pool_cache() { return *pools_; }
  kube::Informer& pod_cache() { return *pods_; }
  kube::Informer& secret_cache() { return *secrets_; }
  controllers::RolloutPoolController& rollout_pools() { return *pool_logic_; }
  kube::Informer& trainer_job_cache() { return *jobs_; }
  controllers::TrainerJobController& trainer_jobs() { return *job_logic_; }

 private:
  std::vector<kube::Informer*> Informers() const;
  // Starts every informer on its own thread until `stop` (joined by JoinCaches).
  void RunInformers(CancellationToken stop);
  bool WaitForSync(CancellationToken stop);

  ManagerOptions options_;
  std::unique_ptr<kube::Informer> dataflows_, pools_, jobs_, policies_, pods_, services_,
      config_maps_, secrets_, claims_, network_policies_;
  std::unique_ptr<controllers::DataflowController> dataflow_logic_;
  std::unique_ptr<controllers::RolloutPoolController> pool_logic_;
  std::unique_ptr<controllers::TrainerJobController> job_logic_;
  std::unique_ptr<controllers::PolicyController> policy_logic_;
  std::vector<std::thread> informer_threads_;
  std::atomic<bool> synced_{false};
};

}  // namespace sluice::op
