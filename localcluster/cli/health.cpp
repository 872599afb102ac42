#include "localcluster/cli/health.h"

#include <thread>

#include "common/http/client.h"
#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/pid_file.h"

namespace sluice::cli {
namespace {

constexpr std::chrono::milliseconds kPollInterval{250};

Status ProbeApiServer(const HealthCheck& check) {
  ClusterClientOptions options;
  options.connect_timeout = std::chrono::milliseconds(1000);
  options.request_timeout = std::chrono::milliseconds(2000);
  options.attempts = 1;
  Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(check.kubeconfig, options);
  if (!client.ok()) {
    if (client.status().code() == StatusCode::kNotFound) {
      return Status::Unavailable("kubeconfig " + check.kubeconfig + " not written yet");
    }
    return Status::Unavailable(client.status().message());
  }
  kube::RestRequest request;
  request.path = "/readyz";
  Result<kube::RestResponse> response = (*client)->Do(request);
  if (!response.ok()) return Status::Unavailable("/readyz: " + response.status().message());
  return Status::Ok();
}

Status ProbeHttp(const HealthCheck& check) {
  http::ClientOptions options;
  options.base_url = check.base_url;
  options.connect_timeout = std::chrono::milliseconds(1000);
  options.read_timeout = std::chrono::milliseconds(2000);
  options.max_attempts = 1;
  options.user_agent = "sluice-cli/0.1.0";
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
  if (!client.ok()) return client.status();
  Result<http::Response> response = (*client)->Get(check.path);
  if (!response.ok()) {
    return Status::Unavailable(check.base_url + check.path + ": " + response.status().message());
  }
  if (response->status < 200 || response->status >= 300) {
    return Status::Unavailable(check.base_url + check.path + ": HTTP " +
                               std::to_string(response->status));
  }
  return Status::Ok();
}

}  // namespace

Status ProbeHealth(const HealthCheck& check) {
  switch (check.kind) {
    case HealthKind::kApiServerReadyz:
      return ProbeApiServer(check);
    case HealthKind::kHttpGet:
      return ProbeHttp(check);
    case HealthKind::kProcessAlive:
      return Status::Ok();
  }
  return Status::Internal("unknown health check");
}

Status WaitHealthy(const HealthCheck& check, pid_t pid, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  const auto settle = start + std::min(timeout, std::chrono::milliseconds(1000));
  Status last = Status::Unavailable("not probed yet");
  while (true) {
    if (!ProcessAlive(pid)) {
      return Status::Unavailable("process " + std::to_string(pid) +
                                 " exited before becoming healthy");
    }
    const auto now = std::chrono::steady_clock::now();
    if (check.kind == HealthKind::kProcessAlive) {
      if (now >= settle) return Status::Ok();
    } else {
      last = ProbeHealth(check);
      if (last.ok()) return last;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded(
          "not healthy after " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
          " s (" + check.Describe() + "): " + last.message());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace sluice::cli
