// RestConfig: everything a RestClient needs to reach one API server: where it is, how to trust
// it, how to authenticate, and how fast to talk to it.
//
// Built by kubeconfig.h (out-of-cluster) or in_cluster.h (in a Pod), or by hand in tests. Exactly
// one bearer source is used, in this order: `exec` (credential plugin), `token_file` (re-read when
// it rotates), `bearer_token`; `username`/`password` is HTTP basic auth and excludes a bearer
// token. Client certificates live in `tls` and combine with any of them.
//
// Ownership: a value; `exec` is shared by every client made from copies of the config, so they
// share one cached credential.
// Thread safety: a value; the ExecCredentialProvider it points at is thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/http/client.h"
#include "kube/exec_credential.h"

namespace sluice::kube {

// The operator's version, sent in `User-Agent: sluice-operator/<version>`.
inline constexpr char kOperatorVersion[] = "0.1.0";

struct RestConfig {
  std::string host;  // Base URL, "https://10.0.0.1:6443"; a path prefix is allowed.
  http::ClientTlsOptions tls;
  std::string bearer_token;
  std::string token_file;  // Read now and again whenever the file changes.
  std::string username;    // Basic auth.
  std::string password;
  std::shared_ptr<ExecCredentialProvider> exec;
  // The namespace of the current context (or of the Pod in-cluster); "default" otherwise.
  std::string default_namespace = "default";
  // Client-side rate limit, client-go's defaults: 5 requests/s sustained, bursts of 10.
  // qps <= 0 disables the limiter.
  double qps = 5.0;
  int burst = 10;
  std::string user_agent = std::string("sluice-operator/") + kOperatorVersion;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};  // Read timeout of non-watch requests.
};

}  // namespace sluice::kube
