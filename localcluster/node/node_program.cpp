#include "localcluster/node/node_program.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/config/environment.h"
#include "common/http/server.h"
#include "common/http/url.h"
#include "common/logging/logger.h"
#include "kube/kubeconfig.h"
#include "kube/rest_client.h"
#include "localcluster/node/kubelet_server.h"
#include "localcluster/node/node_agent.h"

namespace sluice::node {
namespace {

constexpr const char* kProgram = "sluice-node";

template <typename D>
std::chrono::milliseconds Ms(D d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

int ServeNode(service::Service& svc) {
  const config::Config* cfg = &svc.config;
  log::Logger& logger = svc.logger;
  const config::Environment environment = config::EnvironmentFromProcess();

  NodeAgentOptions options;
  Result<ClusterConfig> cluster = LoadClusterConfig(cfg->GetString("cluster-config"));
  if (!cluster.ok()) {
    std::cerr << kProgram << ": --cluster-config: " << cluster.status().message() << "\n";
    return 2;
  }
  options.cluster = std::move(*cluster);
  if (const std::string& map = cfg->GetString("image-map"); !map.empty()) {
    Result<ImageMap> images = ImageMap::Load(map);
    if (!images.ok()) {
      std::cerr << kProgram << ": --image-map: " << images.status().message() << "\n";
      return 2;
    }
    options.image_map = std::move(*images);
  }
  options.bin_dir = cfg->GetString("bin-dir");
  if (options.bin_dir.empty()) {
    std::error_code ec;
    options.bin_dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  }
  options.state_dir = std::filesystem::absolute(cfg->GetString("state-dir"));
  options.agent_name = cfg->GetString("name");
  options.pod_ip_prefix = cfg->GetString("pod-ip-prefix");
  {
    // "127.N" with 1 <= N <= 254: inside the loopback network, a whole /16.
    const std::string& p = options.pod_ip_prefix;
    const bool ok = p.size() > 4 && p.rfind("127.", 0) == 0 &&
                    p.find_first_not_of("0123456789", 4) == std::string::npos && p.size() <= 7 &&
                    std::stoi(p.substr(4)) >= 1 && std::stoi(p.substr(4)) <= 254;
    if (!ok) {
      std::cerr << kProgram << ": --pod-ip-prefix: must be 127.N with N from 1 to 254, got \"" << p
                << "\"\n";
      return 2;
    }
  }
  if (const std::string& file = cfg->GetString("prometheus-targets-file"); !file.empty()) {
    options.prometheus_targets_file = std::filesystem::absolute(file);
  }
  options.heartbeat_interval = Ms(cfg->GetDuration("heartbeat-interval"));
  options.node_monitor_grace = Ms(cfg->GetDuration("node-monitor-grace-period"));
  options.pod_eviction_timeout = Ms(cfg->GetDuration("pod-eviction-timeout"));
  options.backoff_base = Ms(cfg->GetDuration("crash-backoff"));
  options.backoff_max = Ms(cfg->GetDuration("crash-backoff-max"));
  options.sync_period = Ms(cfg->GetDuration("sync-period"));
  options.shutdown_grace = Ms(cfg->GetDuration("shutdown-grace"));

  SystemClock clock;
  Result<kube::Kubeconfig> kubeconfig = kube::LoadKubeconfig({cfg->GetString("kubeconfig")});
  if (!kubeconfig.ok()) {
    std::cerr << kProgram << ": --kubeconfig: " << kubeconfig.status().message() << "\n";
    return 2;
  }
  Result<kube::RestConfig> rest_config = kube::RestConfigFromKubeconfig(*kubeconfig, {}, clock);
  if (!rest_config.ok()) {
    std::cerr << kProgram << ": --kubeconfig: " << rest_config.status().message() << "\n";
    return 2;
  }
  rest_config->user_agent = "sluice-node/0.1.0";
  rest_config->qps = 200;
  rest_config->burst = 400;
  // Containers get the API server as in-cluster Kubernetes would announce it.
  options.base_env = {
      {"PATH", environment.count("PATH") ? environment.at("PATH") : "/usr/local/bin:/usr/bin:/bin"},
      {"LANG", "C.UTF-8"}};
  if (Result<http::Url> url = http::ParseBaseUrl(rest_config->host); url.ok()) {
    options.base_env.emplace_back("KUBERNETES_SERVICE_HOST", url->host);
    options.base_env.emplace_back("KUBERNETES_SERVICE_PORT", std::to_string(url->port));
  }
  // ...and its CA, as every pod's service-account ca.crt.
  options.api_ca_pem = rest_config->tls.ca_pem;
  if (options.api_ca_pem.empty() && !rest_config->tls.ca_file.empty()) {
    std::ifstream in(rest_config->tls.ca_file);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      std::cerr << kProgram << ": --kubeconfig: cannot read the CA file "
                << rest_config->tls.ca_file << "\n";
      return 2;
    }
    options.api_ca_pem = text.str();
  }
  metrics::Registry& registry = svc.registry;
  kube::RestClientOptions client_options;
  client_options.registry = &registry;
  Result<std::unique_ptr<kube::RestClient>> rest =
      kube::RestClient::Create(*rest_config, client_options);
  if (!rest.ok()) {
    std::cerr << kProgram << ": " << rest.status().ToString() << "\n";
    return 1;
  }

  http::ServerOptions server_options;
  server_options.name = "kubelet";
  server_options.address = cfg->GetString("address");
  server_options.port = static_cast<int>(cfg->GetInt("port"));
  server_options.worker_threads = 32;  // Each followed log holds one.
  server_options.access_log = false;
  server_options.shutdown_grace = std::chrono::seconds(2);
  http::Server server(server_options, &registry, logger);
  std::unique_ptr<NodeAgent> agent;
  RegisterKubeletRoutes(server, [&]() -> const NodeAgent* { return agent.get(); });
  server.AddReadinessCheck("nodes-registered", [&]() -> Status {
    return agent && agent->Ready() ? Status::Ok() : Status::Unavailable("registering nodes");
  });
  if (Status s = server.Start(); !s.ok()) {
    logger.Error("cannot serve the kubelet endpoint", {{"error", s.ToString()}});
    return 1;
  }
  options.endpoint = {server_options.address, server.port()};
  options.registry = &registry;
  agent = std::make_unique<NodeAgent>(**rest, std::move(options));
  if (Status s = agent->Start(); !s.ok()) {
    logger.Error("node agent failed to start", {{"error", s.ToString()}});
    server.Shutdown();
    return 1;
  }
  logger.Info("ready",
              {{"kubelet", server.BaseUrl()}, {"hosts_file", agent->hosts_file().string()}});
  svc.stop.Token().Wait();
  logger.Info("shutting down: stopping the pods' processes");
  agent->Stop();
  server.Shutdown();
  return 0;
}

}  // namespace sluice::node
