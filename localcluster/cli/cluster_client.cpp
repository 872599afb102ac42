#include "localcluster/cli/cluster_client.h"

#include <filesystem>

#include "kube/kubeconfig.h"

namespace sluice::cli {

Result<std::unique_ptr<kube::RestClient>> ClusterClient(const std::string& kubeconfig,
                                                        const ClusterClientOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(kubeconfig, ec)) {
    return Status::NotFound(kubeconfig + " does not exist (is the cluster up? `sluice up`)");
  }
  SLUICE_ASSIGN_OR_RETURN(kube::Kubeconfig config, kube::LoadKubeconfig({kubeconfig}));
  SLUICE_ASSIGN_OR_RETURN(
      kube::RestConfig rest,
      kube::RestConfigFromKubeconfig(config, kube::KubeconfigOverrides{}, SystemClock::Instance()));
  rest.qps = 50;
  rest.burst = 100;
  rest.user_agent = "sluice-cli/0.1.0";
  rest.connect_timeout = options.connect_timeout;
  rest.request_timeout = options.request_timeout;
  kube::RestClientOptions client_options;
  client_options.max_attempts = options.attempts;
  client_options.backoff = http::BackoffPolicy{std::chrono::milliseconds(100),
                                               std::chrono::milliseconds(1000), 2.0, 0.5};
  return kube::RestClient::Create(std::move(rest), client_options);
}

}  // namespace sluice::cli
