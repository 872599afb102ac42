// WorkerHost: a rollout replica's worker as its HTTP server and its process see it, before and
// after the policies are loaded (docs/rollout.md, "Program"):
//
//   readiness "policies"  not ready until the worker exists, then RolloutWorker::Readiness (the
//                          weight versions announced when it joined are loaded)
//   GET  /v1/status        the worker's status, or {"loading": true, ...} while loading
//   POST /v1/drain         ?grace=<seconds> (default: drain_grace): stop leasing, let episodes
//                          finish; 503 while loading, 400 naming `grace` when it is not a number
//   POST /v1/relay         {"url": "<http(s) base URL of the region's relay>" or ""}: where this
//                          replica fetches weight versions first (operator/placement/
//                          weight_relays.h); 400 naming `url` for anything else
//
// Run drives the worker until SIGTERM, then drains it (stop leasing, let the episodes in flight
// finish within drain_grace, hand back the rest) before returning.
//
// Ownership: `updater` and `logger` outlive the host; the host owns the worker.
// Thread safety: the routes may run on server threads while SetWorker and Run run on the main
// thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/process/cancellation.h"
#include "workers/rollout/rollout_worker.h"
#include "workers/rollout/weight_updater.h"

namespace sluice::rollout {

class WorkerHost {
 public:
  WorkerHost(WeightUpdater* updater, std::chrono::seconds drain_grace, log::Logger* logger);

  // Registers the readiness check and the routes above, and the updater's relay routes.
  void Register(http::Server& server);

  // The worker, once the policies are loaded; the routes answer for it from then on.
  void SetWorker(std::unique_ptr<RolloutWorker> worker);

  // Runs the worker (after SetWorker) until `stop` fires and the worker has drained, or
  // drain_grace (and a second) has passed since; cancels `stop` if the worker ends first.
  void Run(CancellationSource stop);

 private:
  WeightUpdater* updater_;
  const std::chrono::seconds drain_grace_;
  log::Logger* logger_;
  mutable std::mutex mu_;
  std::unique_ptr<RolloutWorker> worker_;  // Set once; guarded by mu_.
};

}  // namespace sluice::rollout
