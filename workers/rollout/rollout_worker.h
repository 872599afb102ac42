// RolloutWorker: the work loop of one rollout replica (docs/rollout.md, "Work loop").
//
//  - Join: before its first lease, Run asks the dataflow for the newest announced version of every
//    hosted policy (GET /v1/versions) and loads each one newer than the held version synchronously
//    through the WeightUpdater (PoliciesBehind). A failed query or fetch is retried with backoff
//    (retry_delay doubling up to join_retry_max), re-asking for the versions each time. `stop`
//    ends a backoff wait at once, a drain ends the join at its next step; a fetch in progress
//    finishes or fails first. Until the join is done ready() is false and nothing is leased; with
//    nothing announced it is done at once.
//  - Lease: while not draining, ask the dataflow for as many tasks as there is room for
//    (TasksToLease: free episode slots, free sequence slots, KV usage), long-polling when idle.
//  - Run: every leased task runs on its own thread through the workflow its `workflow` object
//    names (cached per distinct object); the engine batches the generation requests of all
//    running episodes.
//  - Renew: leases of running episodes are renewed every third of the lease duration; a lease the
//    dataflow withdrew (404/410) cancels its episode, whose result would be refused anyway.
//  - Submit: a finished episode's group is submitted (idempotent by task); an episode that failed
//    releases its lease with the error (a failed attempt); an episode cancelled by shutdown or the
//    end of a drain releases it without one (the work is handed back, not counted as failed).
//  - Weights: every lease reply names the newest version of each hosted policy; a newer one is
//    fetched and loaded in the background (WeightUpdater), one update per policy at a time, while
//    episodes keep generating (their tokens carry the version that produced them). No new lease
//    is asked for while an update is under way: the dataflow's admission charges a worker for
//    the versions it lags, and answers a lagging worker's lease at once so it can load them.
//    A failed update of a version is retried with backoff (retry_delay doubling up to
//    join_retry_max); a newer announcement is tried at once. Without it a lagging worker that
//    still gets tasks (within the staleness bound) would retry on every lease reply, e.g. a
//    thousand times a second against a trainer that is gone.
//  - Drain (Drain()): stop leasing, let running episodes finish within the grace period, then
//    cancel the rest and hand their leases back; drained() once nothing is in flight.
//
// Thread safety: Run blocks on the calling thread; Drain, StatusJson and the accessors may be
// called from any thread (the HTTP handlers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/lease_planner.h"
#include "workers/rollout/weight_updater.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

struct RolloutWorkerOptions {
  std::string worker_id;  // The replica (Pod) name.
  std::string pool;
  std::string region;
  int64_t max_episodes = 16;    // Tasks running at once.
  int64_t max_sequences = 256;  // Engine sequences the running tasks may need at once.
  double kv_high_watermark = 0.95;
  std::chrono::seconds lease_wait{5};           // Long-poll of an idle lease request.
  std::chrono::milliseconds retry_delay{1000};  // After a failed lease request; join backoff base.
  // Longest wait between two join attempts, or two attempts to load one announced version.
  std::chrono::milliseconds join_retry_max{30000};
  std::string environment_token;  // For HTTP environments (may be empty).
  // Times the join, the update backoff, lease renewals and episode durations; null:
  // SystemClock::Instance(). Borrowed, must outlive the worker.
  Clock* clock = nullptr;
};

// Engine figures the loop and the status read.
struct EngineGauges {
  std::function<double()> kv_usage;           // Fraction of KV blocks in use; may be empty.
  std::function<double()> tokens_per_second;  // Generated tokens/s; may be empty.
};

class RolloutWorker {
 public:
  // Borrowed, must outlive the worker: dataflow, backend, updater (may be null: no weight
  // updates), registry (may be null).
  RolloutWorker(RolloutWorkerOptions options, dataflow::DataflowClient* dataflow,
                GenerationBackend* backend, std::map<std::string, PolicyText> policies,
                WeightUpdater* updater, EngineGauges gauges, metrics::Registry* registry);
  ~RolloutWorker();

  // The loop, after the join (above); returns when `stop` is cancelled, after handing back every
  // in-flight lease (running episodes are cancelled first; an episode that finishes in time is
  // still submitted).
  void Run(const CancellationToken& stop);

  // Whether the join is done: the weights announced when the replica joined are loaded and it
  // leases. Stays true afterwards (later versions load in the background).
  bool ready() const { return ready_.load(); }
  // For /readyz: OK once ready(); else Unavailable saying what the join waits for.
  Status Readiness() const;

  // Stops leasing; after `grace` the remaining episodes are cancelled and handed back.
  void Drain(std::chrono::seconds grace);
  bool draining() const { return draining_.load(); }
  bool drained() const;
  int64_t in_flight() const;

  // GET /v1/status: in_flight, draining, drained, policies [{name, version}], tokens_per_second,
  // kv_usage, free_capacity, episodes {submitted, failed, returned}, weights {relay},
  // join {ready, versions (policy -> version held when the join finished; {} before), loading
  // (policy -> version being loaded), error (the last join failure, "" when none)}.
  nlohmann::json StatusJson() const;

  // options_.clock, or the system clock: the worker's time.
  Clock& clock() const { return ClockOrSystem(options_.clock); }

 private:
  struct Episode;
  void Join(const CancellationToken& stop);
  Status JoinOnce(const CancellationToken& stop);
  void LogWeightsUpdated(const UpdateReport& u);
  void LeaseOnce(const CancellationToken& stop);
  void StartEpisode(nlohmann::json task_json);
  void RunEpisode(Episode& episode);
  void RenewLeases();
  void ReapFinished();
  void MaybeUpdateWeights(const std::vector<dataflow::AnnouncedVersion>& versions);
  // Whether `versions` names a hosted policy newer than its loaded weights with no update of
  // any policy under way (one failed).
  bool BehindWithoutUpdate(const std::vector<dataflow::AnnouncedVersion>& versions);
  Result<const Workflow*> WorkflowFor(const nlohmann::json& workflow);
  std::map<std::string, int64_t> HostedVersions() const;

  const RolloutWorkerOptions options_;
  dataflow::DataflowClient* dataflow_;
  GenerationBackend* backend_;
  const std::map<std::string, PolicyText> policies_;
  WeightUpdater* updater_;
  EngineGauges gauges_;
  log::Logger logger_;

  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> samples_per_task_{1};
  std::atomic<int64_t> lease_seconds_{300};
  CancellationSource cancel_all_;  // Cancels every running episode (shutdown, drain timeout).

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::unique_ptr<Episode>> episodes_;    // By lease id.
  std::map<std::string, std::unique_ptr<Workflow>> workflows_;  // By workflow JSON.
  std::map<std::string, std::thread> updates_;  // Weight updates in progress, by policy.
  std::map<std::string, int64_t> updating_to_;
  // After a failed update, by policy: the version that failed, when to try it again, and the
  // wait after the next failure.
  struct UpdateBackoff {
    int64_t version = 0;
    Clock::MonoTime retry_at{};
    std::chrono::milliseconds next_delay{0};
  };
  std::map<std::string, UpdateBackoff> update_backoff_;
  std::thread drain_timer_;
  CancellationSource drain_timer_stop_;
  int64_t submitted_ = 0, failed_ = 0, returned_ = 0;
  // The join's state for status and /readyz.
  std::map<std::string, int64_t> join_loading_;   // Versions it is loading now.
  std::map<std::string, int64_t> join_versions_;  // Held when it finished.
  std::string join_error_;                        // Its last failure; "" when none.

  metrics::CounterFamily* episodes_total_ = nullptr;
  metrics::CounterFamily* tokens_total_ = nullptr;
  metrics::CounterFamily* reward_errors_ = nullptr;
  metrics::CounterFamily* env_steps_ = nullptr;
  metrics::CounterFamily* env_errors_ = nullptr;
  metrics::CounterFamily* errors_ = nullptr;
  metrics::HistogramFamily* episode_seconds_ = nullptr;
  metrics::GaugeFamily* in_flight_gauge_ = nullptr;
  // Engine gauges read at scrape time; removed in the destructor (they call into gauges_).
  std::vector<metrics::CallbackFamily*> callbacks_;
};

}  // namespace sluice::rollout
