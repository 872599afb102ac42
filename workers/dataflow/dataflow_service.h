// DataflowService: the HTTP face of the dataflow (`sluice-dataflow`). It owns the write-ahead log
// and the DataflowCore, recovers the core from the log, registers the `/v1` routes on an
// http::Server and runs a maintenance thread (lease expiry, snapshots).
//
// Routes (docs/dataflow.md, "HTTP API", has every field and code):
//   POST /v1/leases                      JSON LeaseRequest -> JSON LeaseReply (long-polls `wait` s)
//   POST /v1/leases/{id}/renew           -> {"lease_id", "renewed", "lease_seconds"}
//   POST /v1/leases/{id}/release         optional JSON {"error"} -> {"lease_id", "released"}
//   POST /v1/trajectories                one TrajectoryGroup frame -> JSON SubmitResult
//   GET  /v1/batches/{policy}?groups=N&wait=S   one Batch frame, or 204 after `wait` s, or
//                                        410 (reason DataflowDrained) once the policy is drained
//   POST /v1/batches/{id}/ack            optional JSON {"hold"} -> {"batch_id", "acked"} (and
//                                        "held": the hold number, with hold: true)
//   POST /v1/policies/{policy}/held/release   JSON {"through"} -> {"policy", "released"}
//   POST /v1/policies/{policy}/held/resume    JSON {"through"} -> {"policy", "taken_back"}
//                                        (held acknowledgements: dataflow_core.h)
//   POST /v1/policies/{policy}/versions  JSON VersionInfo (optional "evaluate": queue an eval
//                                        round at this version) -> {"policy", "version"}
//   GET  /v1/status                      core status plus WAL, recovery and trainer-wait stats
//   GET  /v1/versions                    -> {"versions": [...]}: the newest announcement of every
//                                        announced policy, as in a lease reply; changes nothing
//   GET  /v1/dataset/train?offset=N&limit=M   a page of the train split (dataset_route.h)
//
// Durability (the log's caller protocol, write_ahead_log.h): the core hands each record to the
// service's sink under the core's lock, and the sink appends it to the log there, so LSN order is
// the order of state changes. Every reply of a route that may change state is sent only after
// WaitDurable of the LSN of the record the request produced (or, when it produced none, of the
// newest LSN at the time it returned, which covers any state it observed). Snapshots read the
// core's state and the log's last LSN under the core's lock and are written outside it. A failed
// append or fsync is fatal: the service stops being ready, answers 503 from then on and cancels
// fatal_token(), so the process can exit and recover from the log.
//
// Lifecycle: construct, Register(server), start the server, Recover() (routes answer 503 and
// /readyz fails until it succeeds), serve, shut the server down, Stop().
//
// Thread safety: handlers run on the server's worker threads concurrently; the core serializes
// itself. Register, Recover and Stop are called from the owning thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/long_poll_slots.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {

struct DataflowServiceOptions {
  WalOptions wal;
  // Write a snapshot (truncating the log) once this many log bytes follow the last one.
  uint64_t snapshot_bytes = uint64_t{64} << 20;
  // How often the maintenance thread expires leases and checks the snapshot threshold.
  std::chrono::milliseconds maintenance_interval{1000};
  // Longest long poll a request may ask for (`wait` of leases and batches).
  std::chrono::milliseconds max_wait{30000};
  // Lease long polls that may wait at once. Each holds one of the server's worker threads, so
  // this must stay below them: a lease that would wait beyond it is answered 429 with
  // Retry-After at once, and the threads left serve batches, submits and acks (a trainer's batch
  // request never queues behind idle rollout replicas). `--max-waiting-leases` sizes it from
  // the worker threads (dataflow_flags.h).
  size_t max_waiting_leases = 12;
  // Seed of the core's generator. Must stay the same across restarts on one log: a recovery
  // without a snapshot re-executes every record from a core created with it.
  uint64_t seed = 1;
  // Write a snapshot in Stop() when the log has records since the last one (faster restarts).
  bool snapshot_on_stop = true;
  // Batch size of a request for 0 groups, per policy (Dataflow spec.batch.perPolicy); policies
  // not listed use DataflowConfig::groups_per_batch.
  std::map<std::string, int64_t> groups_per_batch_by_policy;
};

// Recovery figures, for status and logs.
struct RecoveryInfo {
  ReplayStats replay;
  double seconds = 0;
};

class DataflowService {
 public:
  // `dataset`, `clock`, `registry` (may be null) must outlive the service.
  DataflowService(DataflowServiceOptions options, DataflowConfig config, const Dataset* dataset,
                  Clock* clock, metrics::Registry* registry, const log::Logger& logger);
  ~DataflowService();  // Stop().
  DataflowService(const DataflowService&) = delete;
  DataflowService& operator=(const DataflowService&) = delete;

  // Registers the routes and a readiness check ("dataflow": recovered and not failed). The server
  // must outlive the service (or be shut down before it).
  void Register(http::Server& server);

  // Opens the log, creates the core and replays the log into it (newest snapshot, then the later
  // records), then starts the maintenance thread. Errors: the log is locked by another process
  // (Unavailable), the config is invalid (InvalidArgument), the log is damaged or belongs to
  // another dataset or other policies (Corruption/Conflict). Call once.
  Status Recover();
  bool recovered() const { return ready_.load(std::memory_order_acquire); }

  // Stops the maintenance thread, writes a final snapshot (see snapshot_on_stop) and closes the
  // log. Call after the server has shut down (no requests in flight). Idempotent.
  Status Stop();

  // Writes a snapshot now (no-op when nothing was logged since the last one).
  Status SnapshotNow();

  // Cancelled when the log fails (the process should exit; a restart recovers).
  CancellationToken fatal_token() const { return fatal_.Token(); }

  const RecoveryInfo& recovery() const { return recovery_; }
  // Null before Recover().
  DataflowCore* core() { return core_.get(); }
  WriteAheadLog* wal() { return wal_.get(); }
  // The GET /v1/status body.
  nlohmann::json StatusJson() const;
  // Lease long polls waiting for work now.
  size_t waiting_leases() const { return lease_waits_.waiting(); }

 private:
  struct PolicyWait;

  // Route handlers.
  void HandleLease(const httplib::Request& req, httplib::Response& res);
  void HandleRenew(const httplib::Request& req, httplib::Response& res);
  void HandleRelease(const httplib::Request& req, httplib::Response& res);
  void HandleSubmit(const httplib::Request& req, httplib::Response& res);
  void HandleTakeBatch(const httplib::Request& req, httplib::Response& res);
  // dataflow_service_acks.cpp: acknowledgements, final or held, and the held ones' release and
  // take-back.
  void HandleAck(const httplib::Request& req, httplib::Response& res);
  void HandleReleaseHeld(const httplib::Request& req, httplib::Response& res);
  void HandleResumeHeld(const httplib::Request& req, httplib::Response& res);
  // Both: reads {"through"}, calls `call` on the core and replies {"policy", <count>: n}.
  void HandleHeld(const httplib::Request& req, httplib::Response& res,
                  Result<int64_t> (DataflowCore::*call)(std::string_view, int64_t),
                  const char* count);
  void HandleAnnounce(const httplib::Request& req, httplib::Response& res);
  void HandleStatus(const httplib::Request& req, httplib::Response& res);

  // OK when requests may be served; else the 503 to answer.
  Status Serving() const;
  // Makes what the calling thread's core calls since BeginOp() logged durable (see the header
  // comment). A failure is fatal.
  void BeginOp();
  Status EndOp();
  void Fail(const Status& status);
  void Sink(const Record& record);
  void MaintenanceLoop();
  void RegisterMetrics();
  // StatusJson of the core, cached for a short time for metric scrapes.
  nlohmann::json CachedCoreStatus() const;
  double PolicyValue(const std::string& policy, const char* field) const;
  double CoreValue(const char* group, const char* field) const;
  void RecordBatchWait(const std::string& policy, double seconds, bool served);

  const DataflowServiceOptions options_;
  const DataflowConfig config_;
  const Dataset* const dataset_;
  Clock* const clock_;
  metrics::Registry* const registry_;
  log::Logger logger_;
  http::Server* server_ = nullptr;

  std::unique_ptr<WriteAheadLog> wal_;
  std::unique_ptr<DataflowCore> core_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex fail_mu_;
  Status failure_;
  CancellationSource fatal_;
  RecoveryInfo recovery_;

  CancellationSource stop_;
  std::thread maintenance_;
  std::mutex stop_mu_;
  bool stopped_ = false;
  std::atomic<uint64_t> snapshots_written_{0};
  std::atomic<uint64_t> snapshot_failures_{0};
  std::atomic<uint64_t> last_snapshot_lsn_{0};
  LongPollSlots lease_waits_;  // options_.max_waiting_leases of them.

  // Trainer data-wait accounting per policy (see docs/dataflow.md, "Metrics").
  mutable std::mutex wait_mu_;
  std::map<std::string, std::unique_ptr<PolicyWait>> waits_;

  // Metrics.
  metrics::Counter* ingest_bytes_ = nullptr;
  metrics::CounterFamily* submits_ = nullptr;
  metrics::CounterFamily* wait_seconds_ = nullptr;
  metrics::CounterFamily* batch_requests_ = nullptr;
  metrics::Counter* lease_waits_refused_ = nullptr;
  metrics::Counter* snapshots_total_ = nullptr;
  metrics::GaugeFamily* wait_fraction_ = nullptr;
  metrics::Gauge* recovery_seconds_ = nullptr;
  // Callback metrics installed by this service, removed in the destructor.
  std::vector<std::pair<metrics::CallbackFamily*, std::vector<std::string>>> callbacks_;
  std::mutex snapshot_mu_;  // One SnapshotNow at a time.
  mutable std::mutex cache_mu_;
  mutable std::chrono::steady_clock::time_point cache_time_{};
  mutable nlohmann::json cache_;
};

}  // namespace sluice::dataflow
