#include "operator/manager.h"

#include <utility>

#include "kube/core_resources.h"
#include "operator/controllers/controller.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/reference_indexes.h"

namespace sluice::op {

Manager::Manager(kube::DynamicClient& client, kube::EventRecorder& events, ManagerOptions options)
    : options_(std::move(options)) {
  auto informer = [&](const kube::GroupVersionResource& gvr, bool managed_only,
                      kube::Indexers indexers = {}) {
    kube::InformerOptions o;
    o.extra_indexers = std::move(indexers);
    o.resync_period = options_.resync_period;
    if (managed_only) o.reflector.selectors.label_selector = controllers::kManagedSelector;
    std::vector<kube::ResourceClient> scopes;
    for (const std::string& n : options_.namespaces) scopes.push_back(client.Resource(gvr, n));
    return std::make_unique<kube::Informer>(std::move(scopes), o);
  };
  dataflows_ = informer({"sluice.dev", "v1alpha1", "dataflows", true}, false);
  pools_ = informer({"sluice.dev", "v1alpha1", "rolloutpools", true}, false,
                    controllers::PoolIndexers());
  jobs_ = informer({"sluice.dev", "v1alpha1", "trainerjobs", true}, false,
                   controllers::TrainerJobIndexers());
  policies_ = informer({"sluice.dev", "v1alpha1", "policies", true}, false);
  pods_ = informer({"", "v1", "pods", true}, true);
  services_ = informer({"", "v1", "services", true}, true);
  config_maps_ = informer({"", "v1", "configmaps", true}, true);
  secrets_ = informer({"", "v1", "secrets", true}, true);
  claims_ = informer({"", "v1", "persistentvolumeclaims", true}, true);
  network_policies_ = informer(kube::kNetworkPolicies, true);

  controllers::DataflowControllerOptions df;
  df.images = options_.images;
  df.status_period = options_.status_period;
  df.clock = options_.clock;
  dataflow_logic_ = std::make_unique<controllers::DataflowController>(
      client,
      controllers::DataflowInformers{dataflows_.get(), pods_.get(), services_.get(),
                                     config_maps_.get(), secrets_.get(), claims_.get(),
                                     network_policies_.get()},
      events, df);
  controllers::RolloutPoolControllerOptions pool;
  pool.images = options_.images;
  pool.prometheus_url = options_.prometheus_url;
  pool.status_period = options_.status_period;
  pool.clock = options_.clock;
  pool.registry = options_.registry;  // sluice_rolloutpool_*, sluice_autoscaler_*
  pool_logic_ = std::make_unique<controllers::RolloutPoolController>(
      client,
      controllers::RolloutPoolInformers{pools_.get(), pods_.get(), dataflows_.get(), secrets_.get(),
                                        policies_.get(), config_maps_.get()},
      events, pool);
  controllers::TrainerJobControllerOptions job;
  job.images = options_.images;
  job.status_period = options_.status_period;
  job.clock = options_.clock;
  job.gang_timeout = options_.gang_timeout;
  job_logic_ = std::make_unique<controllers::TrainerJobController>(
      client,
      controllers::TrainerJobInformers{jobs_.get(), pods_.get(), services_.get(),
                                       config_maps_.get(), policies_.get(), dataflows_.get(),
                                       secrets_.get(), pools_.get(), network_policies_.get()},
      events, job);
  policy_logic_ = std::make_unique<controllers::PolicyController>(
      client, controllers::PolicyInformers{policies_.get(), jobs_.get(), pools_.get()}, events,
      options_.clock);
}

Manager::~Manager() = default;

std::vector<kube::Informer*> Manager::Informers() const {
  return {dataflows_.get(), pools_.get(),           jobs_.get(),        policies_.get(),
          pods_.get(),      services_.get(),        config_maps_.get(), secrets_.get(),
          claims_.get(),    network_policies_.get()};
}

bool Manager::WaitForSync(CancellationToken stop) {
  bool synced = true;
  for (kube::Informer* i : Informers()) synced = synced && i->WaitForSync(stop);
  if (synced) synced_ = true;
  return synced;
}

void Manager::RunInformers(CancellationToken stop) {
  for (kube::Informer* i : Informers()) {
    informer_threads_.emplace_back([i, stop] { i->Run(stop); });
  }
}

bool Manager::StartCaches(CancellationToken stop) {
  RunInformers(stop);
  return WaitForSync(stop);
}

void Manager::JoinCaches() {
  for (std::thread& t : informer_threads_) t.join();
  informer_threads_.clear();
}

void Manager::Run(CancellationToken stop) {
  RunInformers(stop);
  // The controllers register their watches before the caches deliver their first objects.
  controllers::ControllerOptions o;
  o.registry = options_.registry;
  o.clock = options_.clock;
  o.name = "dataflow";
  o.max_concurrent_reconciles = options_.dataflow_concurrency;
  controllers::Controller dataflow_controller(
      o, *dataflows_, [this](const std::string& key) { return dataflow_logic_->Reconcile(key); });
  for (kube::Informer* owned : {pods_.get(), services_.get(), config_maps_.get(), secrets_.get(),
                                network_policies_.get()}) {
    dataflow_controller.WatchOwned(*owned, "Dataflow");
  }

  o.name = "rolloutpool";
  o.max_concurrent_reconciles = options_.rolloutpool_concurrency;
  controllers::Controller pool_controller(
      o, *pools_, [this](const std::string& key) { return pool_logic_->Reconcile(key); });
  pool_controller.WatchOwned(*pods_, "RolloutPool");
  pool_controller.WatchOwned(*config_maps_, "RolloutPool");
  pool_controller.WatchOwned(*secrets_, "RolloutPool");  // The replicas' serving certificate.
  pool_controller.Watch(*policies_,
                        [this](const nlohmann::json& p) { return pool_logic_->PoolsOfPolicy(p); });
  pool_controller.Watch(
      *dataflows_, [this](const nlohmann::json& df) { return pool_logic_->PoolsOfDataflow(df); });
  // The token Secret appears after the pool may have looked for it.
  pool_controller.Watch(*secrets_, [this](const nlohmann::json& secret) {
    const std::string df = secret.value("/metadata/labels/sluice.dev~1dataflow"_json_pointer, "");
    if (df.empty()) return std::vector<std::string>{};
    nlohmann::json ref = {
        {"metadata",
         {{"name", df}, {"namespace", secret.value("/metadata/namespace"_json_pointer, "")}}}};
    return pool_logic_->PoolsOfDataflow(ref);
  });

  o.name = "trainerjob";
  o.max_concurrent_reconciles = options_.trainerjob_concurrency;
  controllers::Controller job_controller(
      o, *jobs_, [this](const std::string& key) { return job_logic_->Reconcile(key); });
  job_controller.WatchOwned(*pods_, "TrainerJob");
  job_controller.WatchOwned(*network_policies_, "TrainerJob");
  job_controller.WatchOwned(*secrets_, "TrainerJob");  // The ranks' serving certificate.
  job_controller.Watch(*policies_, [this](const nlohmann::json& p) {
    return job_logic_->JobsReferencing(p, "policyRef");
  });
  job_controller.Watch(*dataflows_, [this](const nlohmann::json& d) {
    return job_logic_->JobsReferencing(d, "dataflowRef");
  });

  o.name = "policy";
  o.max_concurrent_reconciles = options_.policy_concurrency;
  controllers::Controller policy_controller(
      o, *policies_, [this](const std::string& key) { return policy_logic_->Reconcile(key); });
  policy_controller.Watch(*jobs_, [](const nlohmann::json& j) {
    return controllers::PolicyController::PoliciesOfJob(j);
  });
  policy_controller.Watch(*pools_, [](const nlohmann::json& p) {
    return controllers::PolicyController::PoliciesOfPool(p);
  });

  if (WaitForSync(stop)) {
    if (options_.logger != nullptr) {
      std::string watched;
      for (const std::string& n : options_.namespaces) {
        watched += (watched.empty() ? "" : ",") + (n.empty() ? std::string("(all)") : n);
      }
      options_.logger->Info("caches synced; reconciling", {{"namespace", watched}});
    }
    std::thread pools_thread([&] { pool_controller.Run(stop); });
    std::thread jobs_thread([&] { job_controller.Run(stop); });
    std::thread policies_thread([&] { policy_controller.Run(stop); });
    dataflow_controller.Run(stop);
    pools_thread.join();
    jobs_thread.join();
    policies_thread.join();
  }
  JoinCaches();
}

}  // namespace sluice::op
