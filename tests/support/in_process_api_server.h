// A local API server in this process (memory storage, one bearer token, port 0) with a REST and
// a dynamic client for it: what tests and benchmarks share that need a real API server (its
// validation, watches, subresources, resourceVersion preconditions) but no processes.
//
// Ownership: owns the server and the clients; the clients must not be used after it is gone.
// Thread safety: the clients are thread-safe; Create and destruction from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/rest_client.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/memory_storage.h"

namespace sluice::test_support {

struct InProcessApiServerOptions {
  std::string token = "in-process-api-server-token";
  int worker_threads = 32;            // Every open watch holds one.
  size_t max_queued_connections = 0;  // 0: the HTTP server's default.
  // Requests/s each client may make; negative: the server's default; 0: no limit.
  double rate_limit_qps = -1;
  Clock* clock = &SystemClock::Instance();  // The server's time (creation, deletion stamps).
};

class InProcessApiServer {
 public:
  static Result<std::unique_ptr<InProcessApiServer>> Create(
      InProcessApiServerOptions options = {}) {
    std::unique_ptr<InProcessApiServer> s(new InProcessApiServer(options.token));
    apiserver::ApiServerOptions server_options;
    server_options.http.port = 0;
    server_options.http.auth = http::TokenSource::FromValue(options.token);
    server_options.http.access_log = false;
    server_options.http.shutdown_grace = std::chrono::milliseconds(500);
    server_options.http.worker_threads = options.worker_threads;
    if (options.max_queued_connections > 0) {
      server_options.http.max_queued_connections = options.max_queued_connections;
    }
    if (options.rate_limit_qps >= 0) server_options.rate_limit_qps = options.rate_limit_qps;
    SLUICE_ASSIGN_OR_RETURN(
        s->server_,
        apiserver::ApiServer::Create(
            std::move(server_options), std::make_unique<apiserver::MemoryStorage>(), options.clock,
            &s->metrics_, log::Logger("apiserver", *options.clock, [](std::string_view) {})));
    SLUICE_RETURN_IF_ERROR(s->server_->Start());
    kube::RestConfig cfg;
    cfg.host = s->server_->BaseUrl();
    cfg.bearer_token = options.token;
    cfg.qps = 0;
    SLUICE_ASSIGN_OR_RETURN(s->rest_, kube::RestClient::Create(cfg));
    s->dynamic_ = std::make_unique<kube::DynamicClient>(*s->rest_);
    return s;
  }

  ~InProcessApiServer() {
    dynamic_.reset();
    rest_.reset();
    if (server_) server_->Shutdown();
  }
  InProcessApiServer(const InProcessApiServer&) = delete;
  InProcessApiServer& operator=(const InProcessApiServer&) = delete;

  std::string base_url() const { return server_->BaseUrl(); }
  const std::string& token() const { return token_; }
  kube::RestClient& rest() { return *rest_; }
  kube::DynamicClient& dynamic() { return *dynamic_; }
  apiserver::ApiServer& server() { return *server_; }
  // The server's sluice_apiserver_* metrics.
  metrics::Registry& metrics() { return metrics_; }

 private:
  explicit InProcessApiServer(std::string token) : token_(std::move(token)) {}

  std::string token_;
  metrics::Registry metrics_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::DynamicClient> dynamic_;
};

}  // namespace sluice::test_support
