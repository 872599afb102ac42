#include "operator/operator_program.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "common/config/environment.h"
#include "common/config/program_start.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/signals.h"
#include "kube/event_recorder.h"
#include "kube/in_cluster.h"
#include "kube/kubeconfig.h"
#include "kube/leader_election.h"
#include "kube/rest_client.h"
#include "kube/watch_namespaces.h"
#include "operator/manager.h"
#include "operator/operator_flags.h"

namespace sluice::op {
namespace {

constexpr const char* kProgram = "sluice-operator";

std::string ReadFileOr(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  std::string value;
  if (in >> value) return value;
  return fallback;
}

}  // namespace

int RunOperator(int argc, char** argv) {
  const config::Spec spec = OperatorFlagSpec();
  const config::Environment env = config::EnvironmentFromProcess();
  int exit_code = 0;
  std::optional<config::Config> cfg =
      config::StartProgram(spec, argc, argv, kProgram,
                           "The Sluice operator: reconciles Policies, RolloutPools, "
                           "Dataflows and TrainerJobs. See docs/operator.md.",
                           &exit_code);
  if (!cfg) return exit_code;
  Result<std::pair<std::string, int>> metrics_addr =
      BindAddress(cfg->GetString("metrics-bind-address"), "--metrics-bind-address");
  Result<std::pair<std::string, int>> health_addr =
      BindAddress(cfg->GetString("health-probe-bind-address"), "--health-probe-bind-address");
  for (const auto* r : {&metrics_addr, &health_addr}) {
    if (!r->ok()) {
      std::cerr << kProgram << ": " << r->status().field() << ": " << r->status().message() << "\n";
      return 2;
    }
  }
  const std::string ns = cfg->GetString("namespace");
  Result<std::vector<std::string>> namespaces = kube::ParseWatchNamespaces(ns);
  if (!namespaces.ok()) {
    std::cerr << kProgram << ": flag --namespace: " << namespaces.status().message() << "\n";
    return 2;
  }
  CancellationSource stop;
  if (Status s = InstallShutdownSignals(stop); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    return 1;
  }
  log::Logger logger("operator");
  SystemClock clock;

  // Where the API server is: a kubeconfig, or the service account when running in a Pod.
  Result<kube::RestConfig> rest_config = Status::NotFound("no configuration");
  const bool in_pod =
      env.count("KUBERNETES_SERVICE_HOST") > 0 && cfg->GetString("kubeconfig").empty();
  if (in_pod) {
    // The local cluster's node has no mount namespaces: the pod's files are under
    // $SLUICE_ROOT (localcluster/node/service_account_volume.h); on Kubernetes it is unset.
    kube::InClusterPaths files;
    if (env.count("SLUICE_ROOT") > 0 && !env.at("SLUICE_ROOT").empty()) {
      files = kube::InClusterPathsUnder(env.at("SLUICE_ROOT"));
    }
    rest_config = kube::InClusterConfig(
        env.at("KUBERNETES_SERVICE_HOST"),
        env.count("KUBERNETES_SERVICE_PORT") ? env.at("KUBERNETES_SERVICE_PORT") : "443", files);
  } else {
    std::vector<std::filesystem::path> paths;
    if (!cfg->GetString("kubeconfig").empty()) {
      paths.push_back(cfg->GetString("kubeconfig"));
    } else if (env.count("KUBECONFIG")) {
      paths.push_back(env.at("KUBECONFIG"));
    } else if (env.count("HOME")) {
      paths.push_back(std::filesystem::path(env.at("HOME")) / ".kube" / "config");
    }
    Result<kube::Kubeconfig> kubeconfig = kube::LoadKubeconfig(paths);
    if (kubeconfig.ok()) {
      kube::KubeconfigOverrides overrides;
      overrides.context = cfg->GetString("context");
      rest_config = kube::RestConfigFromKubeconfig(*kubeconfig, overrides, clock);
    } else {
      rest_config = kubeconfig.status();
    }
  }
  if (!rest_config.ok()) {
    std::cerr << kProgram << ": cannot reach the API server: " << rest_config.status().message()
              << "\n";
    return 2;
  }
  rest_config->user_agent = "sluice-operator/0.1.0";
  rest_config->qps = cfg->GetDouble("kube-api-qps");
  rest_config->burst = static_cast<int>(cfg->GetInt("kube-api-burst"));

  metrics::Registry registry;
  kube::RestClientOptions client_options;
  client_options.registry = &registry;
  Result<std::unique_ptr<kube::RestClient>> rest =
      kube::RestClient::Create(*rest_config, client_options);
  if (!rest.ok()) {
    logger.Error("cannot create the API client", {{"error", rest.status().ToString()}});
    return 1;
  }
  kube::DynamicClient client(**rest);

  // The caches and controllers (manager.h); the leader runs them.
  kube::EventRecorderOptions event_options;
  event_options.component = "sluice-operator";
  kube::EventRecorder events(client, event_options);
  ManagerOptions manager_options;
  manager_options.namespaces = *namespaces;
  manager_options.resync_period =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("resync-period"));
  manager_options.images.dataflow = cfg->GetString("dataflow-image");
  manager_options.images.rollout = cfg->GetString("rollout-image");
  manager_options.images.trainer = cfg->GetString("trainer-image");
  manager_options.images.vllm = cfg->GetString("vllm-image");
  manager_options.images.sglang = cfg->GetString("sglang-image");
  manager_options.images.pull_policy = cfg->GetString("image-pull-policy");
  manager_options.images.rollout_seccomp_profile = cfg->GetString("rollout-seccomp-profile");
  manager_options.status_period =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("status-period"));
  manager_options.prometheus_url = cfg->GetString("prometheus-url");
  manager_options.gang_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(cfg->GetDuration("gang-scheduling-timeout"));
  manager_options.dataflow_concurrency = static_cast<int>(cfg->GetInt("dataflow-concurrency"));
  manager_options.rolloutpool_concurrency =
      static_cast<int>(cfg->GetInt("rolloutpool-concurrency"));
  manager_options.trainerjob_concurrency = static_cast<int>(cfg->GetInt("trainerjob-concurrency"));
  manager_options.policy_concurrency = static_cast<int>(cfg->GetInt("policy-concurrency"));
  manager_options.registry = &registry;
  manager_options.logger = &logger;
  Manager manager(client, events, manager_options);

  // Health and metrics endpoints.
  http::ServerOptions metrics_options;
  metrics_options.name = "metrics";
  metrics_options.address = metrics_addr->first;
  metrics_options.port = metrics_addr->second;
  metrics_options.access_log = false;
  metrics_options.metrics_require_auth = false;
  http::Server metrics_server(metrics_options, &registry, logger);
  http::ServerOptions health_options = metrics_options;
  health_options.name = "health";
  health_options.address = health_addr->first;
  health_options.port = health_addr->second;
  http::Server health_server(health_options, nullptr, logger);
  health_server.AddReadinessCheck("informers-synced", [&]() -> Status {
    // A candidate that is not leading is ready too (it serves as a standby).
    return manager.caches_synced() || cfg->GetBool("leader-elect")
               ? Status::Ok()
               : Status::Unavailable("caches are syncing");
  });
  for (http::Server* s : {&metrics_server, &health_server}) {
    if (Status st = s->Start(); !st.ok()) {
      logger.Error("cannot listen", {{"error", st.ToString()}});
      return 1;
    }
  }

  auto run_controllers = [&](CancellationToken leading) { manager.Run(leading); };

  if (!cfg->GetBool("leader-elect")) {
    run_controllers(stop.Token());
  } else {
    std::string lease_ns = cfg->GetString("leader-election-namespace");
    if (lease_ns.empty()) {
      lease_ns =
          in_pod ? ReadFileOr(kube::InClusterPaths{}.namespace_file, "default") : "kube-system";
    }
    kube::LeaderElectionConfig le;
    le.lease_name = cfg->GetString("leader-election-id");
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    le.identity = kube::LeaderIdentity(env.count("POD_NAME") ? env.at("POD_NAME") : host);
    le.lease_duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        cfg->GetDuration("leader-election-lease-duration"));
    le.renew_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(
        cfg->GetDuration("leader-election-renew-deadline"));
    le.retry_period = std::chrono::duration_cast<std::chrono::milliseconds>(
        cfg->GetDuration("leader-election-retry-period"));
    le.registry = &registry;
    std::atomic<bool> led{false};
    le.on_started_leading = [&](CancellationToken leading) {
      led = true;
      logger.Info("became the leader", {{"identity", le.identity}});
      run_controllers(leading);
    };
    le.on_new_leader = [&](const std::string& who) {
      logger.Info("leader observed", {{"leader", who}});
    };
    kube::LeaderElector elector(
        client.Resource({"coordination.k8s.io", "v1", "leases", true}, lease_ns), le, clock);
    elector.Run(stop.Token());
    if (!stop.IsCancelled() && led.load()) {
      logger.Error("leader election lost; exiting so a fresh candidate can take over");
      exit_code = 1;
    }
  }
  logger.Info("shutting down");
  metrics_server.Shutdown();
  health_server.Shutdown();
  return exit_code;
}

}  // namespace sluice::op
