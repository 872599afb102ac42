// A RestClient for the local cluster, from the kubeconfig the API server writes
// (DIR/kubeconfig), for `up` (health, CRDs), `status` and `node`.
//
// The CLI talks to one local server interactively, so the client-side limiter is loosened (50
// requests/s) and timeouts are short; `attempts` 1 turns retries off (health probes poll anyway).
//
// Ownership: the returned client is the caller's; it uses SystemClock::Instance().
// Thread safety: a plain function.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "kube/rest_client.h"

namespace sluice::cli {

struct ClusterClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{10000};
  int attempts = 3;
};

// NotFound naming the file when it does not exist; the kubeconfig's errors otherwise.
Result<std::unique_ptr<kube::RestClient>> ClusterClient(const std::string& kubeconfig,
                                                        const ClusterClientOptions& options = {});

}  // namespace sluice::cli
