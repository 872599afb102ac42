// The RolloutPool reconciler's calls to its replicas' rollout workers (workers/rollout/
// worker_host.h): GET /v1/status, POST /v1/drain and POST /v1/relay, over HTTPS verified with the
// namespace's CA under the pool's role name (the URL is the pod IP's), with the replicas' bearer
// token, a short timeout and no retries (a lost call is repeated at the next reconcile).
//
// Thread safety: the methods may be called from any thread; each call opens its own connection.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace sluice::controllers::rolloutpool {

// What a call to the pool's replicas carries.
struct WorkerCredentials {
  std::string token;        // The pool's control token; empty: none sent.
  std::string ca_pem;       // The namespace's CA; empty: the system's CAs.
  std::string server_name;  // The name to verify (RolloutServerName); empty: the URL's host.
};

class WorkerClient {
 public:
  // `timeout` bounds the connect and each read.
  explicit WorkerClient(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  // GET /v1/status of the worker at `url` ("https://<pod IP>:<port>"): its JSON object reply.
  Result<nlohmann::json> GetStatus(const std::string& url, const WorkerCredentials& creds) const;

  // POST /v1/drain: the worker stops taking work and hands back what it holds.
  Status Drain(const std::string& url, const WorkerCredentials& creds) const;

  // POST /v1/relay {"url": relay}: the peer the worker fetches weights from ("" makes it its
  // region's relay).
  Status SetRelay(const std::string& url, const WorkerCredentials& creds,
                  const std::string& relay) const;

 private:
  Result<nlohmann::json> Call(const std::string& url, const WorkerCredentials& creds,
                              const std::string& method, const std::string& path,
                              const std::string& body) const;

  std::chrono::milliseconds timeout_;
};

}  // namespace sluice::controllers::rolloutpool
