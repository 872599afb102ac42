#include "workers/dataflow/dataflow_service.h"

#include <algorithm>
#include <string_view>

#include "common/http/json_body.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/dataflow/dataset_route.h"
#include "workers/dataflow/request_fields.h"

namespace sluice::dataflow {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Per policy: how long its trainer has been blocked in GET /v1/batches.
struct DataflowService::PolicyWait {
  double total_seconds = 0;
  double since_serve_seconds = 0;  // Blocked since the last served batch.
  bool has_served = false;
  SteadyClock::time_point last_serve{};
  double fraction = 0;  // Of the last step (see docs/dataflow.md, "Metrics").
};

namespace {

constexpr std::string_view kOctetStream = "application/octet-stream";
// Bytes of a batch frame encoded per write to the socket: large enough that syscalls and wakeups
// are few, small enough that the copy is still in cache for the checksum and that the client reads
// one piece while the next is encoded. A 35 MB batch over loopback took 26 ms with 512 KiB to
// 2 MiB pieces against 34 ms with 128 KiB ones (docs/benchmarks.md).
constexpr size_t kBatchChunkBytes = size_t{1} << 20;
// Largest `groups` a batch request may ask for.
constexpr int64_t kMaxBatchGroups = 1 << 16;
// How long the metrics' view of the core status is reused between scrapes.
constexpr auto kStatusCacheTtl = std::chrono::milliseconds(200);

// What the calling thread's core calls logged since BeginOp.
struct OpState {
  uint64_t lsn = 0;
  Status error;
};
thread_local OpState t_op;

struct ParsedLease {
  LeaseRequest request;
  double wait_seconds = 0;
};

Result<ParsedLease> ParseLeaseRequest(const json& j) {
  ParsedLease p;
  SLUICE_RETURN_IF_ERROR(
      RejectUnknownKeys(j, {"worker_id", "pool", "region", "hosted_policies", "capacity", "wait"}));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "worker_id", true, p.request.worker_id));
  if (p.request.worker_id.empty()) return BadField("must not be empty", "worker_id");
  SLUICE_RETURN_IF_ERROR(ReadString(j, "pool", false, p.request.pool));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "region", false, p.request.region));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "capacity", false, p.request.capacity));
  if (p.request.capacity > 1024) return BadField("must be at most 1024", "capacity");
  SLUICE_RETURN_IF_ERROR(ReadSeconds(j, "wait", p.wait_seconds));
  if (auto it = j.find("hosted_policies"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      return BadField("must be an object of policy name to loaded version", "hosted_policies");
    }
    for (const auto& [name, version] : it->items()) {
      if (!version.is_number_integer()) {
        return BadField("must be an integer version", "hosted_policies." + name);
      }
      p.request.hosted_policies[name] = version.get<int64_t>();
    }
  }
  return p;
}

int64_t UnixMillis(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

json VersionJson(const VersionInfo& v) {
  return {{"number", v.number},
          {"url", v.url},
          {"digest", v.digest},
          {"delta_base", v.delta_base},
          {"evaluate", v.evaluate}};
}

// `versions` of a lease reply and of GET /v1/versions: {policy, number, url, digest, ...}.
json VersionsJson(const std::vector<PolicyVersion>& versions) {
  json out = json::array();
  for (const PolicyVersion& v : versions) {
    json entry = VersionJson(v.version);
    entry["policy"] = v.policy;
    out.push_back(std::move(entry));
  }
  return out;
}

// Whether `reply` names a version of a policy newer than the one `request` says it holds.
bool NamesNewerVersion(const LeaseReply& reply, const LeaseRequest& request) {
  for (const PolicyVersion& v : reply.versions) {
    auto hosted = request.hosted_policies.find(v.policy);
    if (hosted != request.hosted_policies.end() && v.version.number > hosted->second) return true;
  }
  return false;
}

json LeaseReplyJson(const LeaseReply& reply, std::chrono::seconds lease_duration) {
  json tasks = json::array();
  for (const LeasedTask& t : reply.tasks) {
    tasks.push_back({{"task_id", t.task_id},
                     {"lease_id", t.lease_id},
                     {"attempt", t.attempt},
                     {"eval", t.eval},
                     {"prompt_id", t.prompt_id},
                     {"prompt", t.prompt},
                     {"answer", t.answer},
                     {"dataset", t.dataset},
                     {"row", t.row},
                     {"samples", t.samples},
                     {"sampling", t.sampling},
                     {"workflow", t.workflow},
                     {"deadline_unix_ms", UnixMillis(t.deadline)}});
  }
  return {{"tasks", std::move(tasks)},
          {"versions", VersionsJson(reply.versions)},
          {"backpressure", reply.backpressure},
          {"lease_seconds", lease_duration.count()}};
}

SteadyClock::time_point DeadlineAfter(double seconds, std::chrono::milliseconds cap) {
  const double capped = std::min(seconds, std::chrono::duration<double>(cap).count());
  return SteadyClock::now() +
         std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(capped));
}

// Sets `flag` when the server shuts down or the service stops, for long polls.
class PollCancel {
 public:
  PollCancel(const CancellationToken& a, const CancellationToken& b)
      : ra_(a.OnCancel([this] { flag_.store(true); })),
        rb_(b.OnCancel([this] { flag_.store(true); })) {}
  const std::atomic<bool>& flag() const { return flag_; }
  bool cancelled() const { return flag_.load(); }

 private:
  std::atomic<bool> flag_{false};
  CancellationRegistration ra_;
  CancellationRegistration rb_;
};

}  // namespace

DataflowService::DataflowService(DataflowServiceOptions options, DataflowConfig config,
                                 const Dataset* dataset, Clock* clock, metrics::Registry* registry,
                                 const log::Logger& logger)
    : options_(std::move(options)),
      config_(std::move(config)),
      dataset_(dataset),
      clock_(clock),
      registry_(registry),
      logger_(logger),
      lease_waits_(options_.max_waiting_leases) {
  for (const std::string& p : config_.policies) waits_[p] = std::make_unique<PolicyWait>();
  if (registry_ != nullptr) RegisterMetrics();
}

DataflowService::~DataflowService() {
  (void)Stop();
  for (auto& [family, labels] : callbacks_) family->Remove(labels);
}

// ---- Durability plumbing. ----

void DataflowService::Sink(const Record& record) {
  Result<uint64_t> lsn = wal_->Append(record.type, record.payload);
  if (!lsn.ok()) {
    t_op.error = lsn.status();
    Fail(lsn.status());
    return;
  }
  t_op.lsn = std::max(t_op.lsn, *lsn);
}

void DataflowService::BeginOp() { t_op = OpState{}; }

Status DataflowService::EndOp() {
  OpState op = std::move(t_op);
  t_op = OpState{};
  if (!op.error.ok()) return Status::Unavailable("write-ahead log failed: " + op.error.message());
  // Without a record of its own the reply may still show state logged by others (a duplicate
  // submit, a repeated ack): wait for everything logged so far.
  const uint64_t lsn = op.lsn > 0 ? op.lsn : wal_->LastLsn();
  if (lsn == 0) return Status::Ok();
  if (Status s = wal_->WaitDurable(lsn); !s.ok()) {
    Fail(s);
    return Status::Unavailable("write-ahead log failed: " + s.message());
  }
  return Status::Ok();
}

void DataflowService::Fail(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(fail_mu_);
    if (failed_.load()) return;
    failure_ = status;
    failed_.store(true);
  }
  logger_.Error("write-ahead log failed; the process must restart to recover",
                {{"error", status.ToString()}});
  fatal_.Cancel();
}

Status DataflowService::Serving() const {
  if (failed_.load()) {
    std::lock_guard<std::mutex> lock(fail_mu_);
    return Status::Unavailable("write-ahead log failed: " + failure_.message());
  }
  if (!ready_.load(std::memory_order_acquire)) {
    return Status::Unavailable("the dataflow is recovering its state");
  }
  return Status::Ok();
}

// ---- Lifecycle. ----

Status DataflowService::Recover() {
  const auto began = SteadyClock::now();
  SLUICE_ASSIGN_OR_RETURN(wal_, WriteAheadLog::Open(options_.wal, registry_));
  SLUICE_ASSIGN_OR_RETURN(core_, DataflowCore::Create(config_, dataset_, clock_, options_.seed,
                                                      [this](const Record& r) { Sink(r); }));
  Result<ReplayStats> stats = wal_->Replay(
      [this](uint64_t, std::string_view snapshot) {
        return core_->RestoreSnapshot(snapshot).WithContext("restoring the snapshot");
      },
      [this](const WalRecord& r) {
        return core_->ApplyRecord(Record{r.type, r.payload})
            .WithContext("replaying log record " + std::to_string(r.lsn));
      });
  if (!stats.ok()) {
    Status s = stats.status();
    (void)wal_->Close();
    return s.WithContext("recovering from " + options_.wal.dir);
  }
  recovery_.replay = *stats;
  recovery_.seconds = std::chrono::duration<double>(SteadyClock::now() - began).count();
  last_snapshot_lsn_.store(stats->snapshot_lsn);
  if (recovery_seconds_ != nullptr) recovery_seconds_->Set(recovery_.seconds);
  logger_.Info("recovered", {{"wal_dir", options_.wal.dir},
                             {"snapshot_lsn", stats->snapshot_lsn},
                             {"records", stats->records},
                             {"truncated_bytes", stats->truncated_bytes},
                             {"last_lsn", stats->last_lsn},
                             {"seconds", recovery_.seconds}});
  ready_.store(true, std::memory_order_release);
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
  return Status::Ok();
}

Status DataflowService::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return Status::Ok();
  stopped_ = true;
  ready_.store(false);
  stop_.Cancel();
  if (maintenance_.joinable()) maintenance_.join();
  if (!wal_) return Status::Ok();
  Status result;
  if (core_ && !failed_.load() && options_.snapshot_on_stop && wal_->BytesSinceSnapshot() > 0) {
    result = SnapshotNow();
    if (!result.ok()) logger_.Warn("final snapshot failed", {{"error", result.ToString()}});
  }
  Status closed = wal_->Close();
  if (!closed.ok()) {
    logger_.Error("closing the write-ahead log failed", {{"error", closed.ToString()}});
    return closed;
  }
  return result;
}

Status DataflowService::SnapshotNow() {
  if (!core_ || !wal_) return Status::Unavailable("not recovered");
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  uint64_t lsn = 0;
  const std::string snapshot = core_->Snapshot([&] { lsn = wal_->LastLsn(); });
  if (lsn == 0 || lsn <= last_snapshot_lsn_.load()) return Status::Ok();
  const auto began = SteadyClock::now();
  if (Status s = wal_->WriteSnapshot(lsn, snapshot); !s.ok()) {
    snapshot_failures_.fetch_add(1);
    return s;
  }
  last_snapshot_lsn_.store(lsn);
  snapshots_written_.fetch_add(1);
  if (snapshots_total_ != nullptr) snapshots_total_->Inc();
  logger_.Info("snapshot written",
               {{"lsn", lsn},
                {"bytes", snapshot.size()},
                {"seconds", std::chrono::duration<double>(SteadyClock::now() - began).count()}});
  return Status::Ok();
}

void DataflowService::MaintenanceLoop() {
  const CancellationToken stop = stop_.Token();
  while (!stop.WaitFor(options_.maintenance_interval)) {
    if (failed_.load()) continue;
    // Expiry records need no fsync of their own: nothing is shown to anyone until a later
    // request's reply, which waits for them.
    BeginOp();
    const int64_t expired = core_->ExpireLeases();
    t_op = OpState{};
    if (expired > 0) logger_.Info("leases expired", {{"count", expired}});
    if (wal_->BytesSinceSnapshot() >= options_.snapshot_bytes) {
      if (Status s = SnapshotNow(); !s.ok()) {
        logger_.Warn("snapshot failed", {{"error", s.ToString()}});
      }
    }
  }
}

// ---- Routes. ----

void DataflowService::Register(http::Server& server) {
  server_ = &server;
  server.AddReadinessCheck("dataflow", [this] { return Serving(); });
  auto route =
      [this](void (DataflowService::*handler)(const httplib::Request&, httplib::Response&)) {
        return [this, handler](const httplib::Request& req, httplib::Response& res) {
          if (Status s = Serving(); !s.ok()) return http::ReplyError(res, s);
          (this->*handler)(req, res);
        };
      };
  server.Post("/v1/leases", route(&DataflowService::HandleLease));
  server.Post(R"(/v1/leases/([^/]+)/renew)", route(&DataflowService::HandleRenew));
  server.Post(R"(/v1/leases/([^/]+)/release)", route(&DataflowService::HandleRelease));
  server.Post("/v1/trajectories", route(&DataflowService::HandleSubmit));
  server.Get(R"(/v1/batches/([^/]+))", route(&DataflowService::HandleTakeBatch));
  server.Post(R"(/v1/batches/([^/]+)/ack)", route(&DataflowService::HandleAck));
  server.Post(R"(/v1/policies/([^/]+)/held/release)", route(&DataflowService::HandleReleaseHeld));
  server.Post(R"(/v1/policies/([^/]+)/held/resume)", route(&DataflowService::HandleResumeHeld));
  server.Post(R"(/v1/policies/([^/]+)/versions)", route(&DataflowService::HandleAnnounce));
  server.Get("/v1/status", route(&DataflowService::HandleStatus));
  // Read-only, no record: what a joining rollout replica loads before it leases (docs/rollout.md).
  server.Get("/v1/versions", [this](const httplib::Request&, httplib::Response& res) {
    if (Status s = Serving(); !s.ok()) return http::ReplyError(res, s);
    http::ReplyJson(res, {{"versions", VersionsJson(core_->AnnouncedVersions())}});
  });
  server.Get("/v1/dataset/train", [this](const httplib::Request& req, httplib::Response& res) {
    if (Status s = Serving(); !s.ok()) return http::ReplyError(res, s);
    ServeTrainRows(*dataset_, req, res);
  });
}

void DataflowService::HandleLease(const httplib::Request& req, httplib::Response& res) {
  Result<json> body = http::ParseJsonObject(req);
  if (!body.ok()) return http::ReplyError(res, body.status());
  Result<ParsedLease> parsed = ParseLeaseRequest(*body);
  if (!parsed.ok()) return http::ReplyError(res, parsed.status());
  const LeaseRequest& request = parsed->request;
  const auto deadline = DeadlineAfter(parsed->wait_seconds, options_.max_wait);
  PollCancel cancel(server_->shutdown_token(), stop_.Token());
  LeaseReply reply;
  LongPollSlots::Slot slot;  // Held while this request waits, given back when it returns.
  while (true) {
    BeginOp();
    reply = core_->Lease(request);
    if (Status s = EndOp(); !s.ok()) return http::ReplyError(res, s);
    if (!reply.tasks.empty() || request.capacity <= 0) break;
    if (cancel.cancelled() || SteadyClock::now() >= deadline) break;
    // A worker behind the announced weights gets the empty reply at once: it names the version
    // to load, and admission counts the worker's lag until it has loaded it.
    if (NamesNewerVersion(reply, request)) break;
    if (!slot.held() && !(slot = lease_waits_.TryTake()).held()) {
      // Nothing was leased: the worker asks again after Retry-After (a 429 may be resent
      // whatever the method), and the threads stay free for batches, submits and acks.
      if (lease_waits_refused_ != nullptr) lease_waits_refused_->Inc();
      res.set_header("Retry-After", "1");
      return http::ReplyError(
          res, Status::TooManyRequests(std::to_string(lease_waits_.capacity()) +
                                       " lease requests are already waiting for work; retry "
                                       "after 1 s"));
    }
    core_->WaitForWork(cancel.flag(), deadline, &request);
  }
  http::ReplyJson(res, LeaseReplyJson(reply, config_.lease_duration));
}

void DataflowService::HandleRenew(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  BeginOp();
  Status s = core_->Renew(id);
  Status durable = EndOp();
  if (!s.ok()) return http::ReplyError(res, s);
  if (!durable.ok()) return http::ReplyError(res, durable);
  http::ReplyJson(
      res,
      {{"lease_id", id}, {"renewed", true}, {"lease_seconds", config_.lease_duration.count()}});
}

void DataflowService::HandleRelease(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  std::string error;
  if (!req.body.empty()) {
    Result<json> body = http::ParseJsonObject(req);
    if (!body.ok()) return http::ReplyError(res, body.status());
    if (Status s = RejectUnknownKeys(*body, {"error"}); !s.ok()) return http::ReplyError(res, s);
    if (Status s = ReadString(*body, "error", false, error); !s.ok()) {
      return http::ReplyError(res, s);
    }
  }
  BeginOp();
  Status s = core_->Release(id, error);
  Status durable = EndOp();
  if (!s.ok()) return http::ReplyError(res, s);
  if (!durable.ok()) return http::ReplyError(res, durable);
  http::ReplyJson(res, {{"lease_id", id}, {"released", true}, {"failed", !error.empty()}});
}

void DataflowService::HandleSubmit(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) {
    submits_->WithLabels({"rejected"}).Inc();
    return http::ReplyError(res, BadField("must be one trajectory-group frame", "body"));
  }
  Result<TrajectoryGroup> group = DecodeTrajectoryGroup(req.body);
  if (!group.ok()) {
    // Damaged bytes (a CRC mismatch is Corruption) are the client's problem here: 400.
    submits_->WithLabels({"rejected"}).Inc();
    const Status& e = group.status();
    return http::ReplyError(
        res, BadField(e.message(), e.field().empty() ? "body" : "body." + e.field()));
  }
  BeginOp();
  Result<SubmitResult> result = core_->Submit(*group, req.body);
  if (!result.ok()) {
    t_op = OpState{};
    submits_->WithLabels({"rejected"}).Inc();
    return http::ReplyError(res, result.status());
  }
  if (Status s = EndOp(); !s.ok()) return http::ReplyError(res, s);
  const SubmitResult& r = *result;
  if (r.duplicate) {
    submits_->WithLabels({"duplicate"}).Inc();
  } else {
    submits_->WithLabels({r.late ? "late" : "accepted"}).Inc();
    ingest_bytes_->Inc(static_cast<double>(req.body.size()));
  }
  http::ReplyJson(res, {{"task_id", group->task_id},
                        {"attempt", group->attempt},
                        {"accepted", !r.duplicate},
                        {"duplicate", r.duplicate},
                        {"late", r.late},
                        {"eval", r.eval},
                        {"groups_kept", r.groups_kept},
                        {"groups_filtered", r.groups_filtered},
                        {"samples_kept", r.samples_kept},
                        {"samples_filtered", r.samples_filtered},
                        {"filtered", !r.duplicate && r.groups_kept == 0}});
}

void DataflowService::HandleTakeBatch(const httplib::Request& req, httplib::Response& res) {
  const std::string policy = req.matches[1];
  int64_t groups = 0;
  double wait = 0;
  if (Status s = QueryInt(req.params, "groups", groups); !s.ok()) return http::ReplyError(res, s);
  if (groups < 0 || groups > kMaxBatchGroups) {
    return http::ReplyError(
        res, BadField("must be in [0, " + std::to_string(kMaxBatchGroups) + "]", "groups"));
  }
  if (Status s = QuerySeconds(req.params, "wait", wait); !s.ok()) return http::ReplyError(res, s);
  if (waits_.find(policy) == waits_.end()) {
    return http::ReplyError(res, Status::NotFound("no policy " + policy + " in this dataflow"));
  }
  if (groups == 0) {
    auto per_policy = options_.groups_per_batch_by_policy.find(policy);
    if (per_policy != options_.groups_per_batch_by_policy.end()) groups = per_policy->second;
  }
  const int64_t effective = groups > 0 ? groups : config_.groups_per_batch;
  const auto began = SteadyClock::now();
  const auto deadline = DeadlineAfter(wait, options_.max_wait);
  PollCancel cancel(server_->shutdown_token(), stop_.Token());
  while (true) {
    BeginOp();
    Result<std::optional<BatchFrame>> batch = core_->TakeBatchFrame(policy, groups);
    if (!batch.ok()) {
      t_op = OpState{};
      return http::ReplyError(res, batch.status());
    }
    if (batch->has_value()) {
      // The take is durable before a byte of the batch leaves.
      if (Status s = EndOp(); !s.ok()) return http::ReplyError(res, s);
      RecordBatchWait(policy, std::chrono::duration<double>(SteadyClock::now() - began).count(),
                      true);
      batch_requests_->WithLabels({policy, "served"}).Inc();
      res.set_header("X-Sluice-Batch-Id", (*batch)->batch_id);
      // The frame is encoded as it is sent, a chunk per write, so the client reads one chunk
      // while the next is encoded and no copy of the whole frame is ever made.
      struct Stream {
        explicit Stream(BatchFrameWriter w) : writer(std::move(w)) {}
        BatchFrameWriter writer;
        std::string chunk;
      };
      auto stream = std::make_shared<Stream>(std::move((*batch)->writer));
      const auto size = static_cast<size_t>(stream->writer.size());
      res.set_content_provider(
          size, std::string(kOctetStream),
          [stream](size_t offset, size_t length, httplib::DataSink& sink) {
            BatchFrameWriter& w = stream->writer;
            if (offset < w.written()) return false;  // Forward only (a Range: one at most).
            // All of it in this one call: httplib checks for shutdown between calls, and a
            // request in flight is to be finished (server.h).
            const uint64_t end = offset + length;
            while (w.written() < end) {
              const bool skip = w.written() < offset;  // Up to the start of a Range.
              const uint64_t left = (skip ? offset : end) - w.written();
              stream->chunk.clear();
              w.Next(static_cast<size_t>(std::min<uint64_t>(left, kBatchChunkBytes)),
                     &stream->chunk);
              if (!skip && !sink.write(stream->chunk.data(), stream->chunk.size())) return false;
            }
            return true;
          });
      return;
    }
    t_op = OpState{};  // Stale drops on the way need no fsync before a 204.
    // The data is exhausted and what is left can never fill a batch: 410, so the trainer stops.
    if (Result<PolicyDrain> drain = core_->Drain(policy, effective); drain.ok() && drain->drained) {
      RecordBatchWait(policy, std::chrono::duration<double>(SteadyClock::now() - began).count(),
                      false);
      batch_requests_->WithLabels({policy, "drained"}).Inc();
      const Status gone = Status::Gone(DrainedMessage(config_.epochs, drain->reason));
      json body = http::ErrorJson(gone);
      body["error"]["reason"] = kDrainedReason;
      return http::ReplyJson(res, body, HttpStatusFor(gone.code()));
    }
    if (cancel.cancelled() || SteadyClock::now() >= deadline) break;
    core_->WaitForBatch(policy, effective, cancel.flag(), deadline);
  }
  RecordBatchWait(policy, std::chrono::duration<double>(SteadyClock::now() - began).count(), false);
  batch_requests_->WithLabels({policy, "empty"}).Inc();
  res.status = 204;
}

void DataflowService::HandleAnnounce(const httplib::Request& req, httplib::Response& res) {
  const std::string policy = req.matches[1];
  Result<json> body = http::ParseJsonObject(req);
  if (!body.ok()) return http::ReplyError(res, body.status());
  VersionInfo v;
  Status s = RejectUnknownKeys(*body, {"number", "url", "digest", "delta_base", "evaluate"});
  if (s.ok()) s = ReadInt(*body, "number", true, v.number);
  if (s.ok() && v.number < 1) s = BadField("must be >= 1", "number");
  if (s.ok()) s = ReadString(*body, "url", false, v.url);
  if (s.ok()) s = ReadString(*body, "digest", false, v.digest);
  if (s.ok()) s = ReadInt(*body, "delta_base", false, v.delta_base);
  if (s.ok()) s = ReadBool(*body, "evaluate", v.evaluate);
  if (s.ok() && (v.delta_base < -1 || v.delta_base >= v.number)) {
    s = BadField("must be -1 (full weights) or an earlier version", "delta_base");
  }
  if (!s.ok()) return http::ReplyError(res, s);
  BeginOp();
  Status announced = core_->AnnounceVersion(policy, v);
  Status durable = EndOp();
  if (!announced.ok()) return http::ReplyError(res, announced);
  if (!durable.ok()) return http::ReplyError(res, durable);
  http::ReplyJson(res, {{"policy", policy}, {"version", VersionJson(v)}});
}

void DataflowService::HandleStatus(const httplib::Request&, httplib::Response& res) {
  http::ReplyJson(res, StatusJson());
}

json DataflowService::StatusJson() const {
  json status = core_ ? core_->StatusJson() : json::object();
  status["ready"] = ready_.load() && !failed_.load();
  if (wal_) {
    const WalStats w = wal_->Stats();
    status["wal"] = {{"dir", options_.wal.dir},
                     {"fsync", options_.wal.fsync},
                     {"last_lsn", wal_->LastLsn()},
                     {"durable_lsn", wal_->DurableLsn()},
                     {"bytes_since_snapshot", wal_->BytesSinceSnapshot()},
                     {"snapshot_threshold_bytes", options_.snapshot_bytes},
                     {"records", w.records},
                     {"bytes", w.bytes},
                     {"fsyncs", w.fsyncs},
                     {"snapshots_written", snapshots_written_.load()},
                     {"snapshot_failures", snapshot_failures_.load()},
                     {"last_snapshot_lsn", last_snapshot_lsn_.load()}};
  }
  const ReplayStats& r = recovery_.replay;
  status["recovery"] = {{"seconds", recovery_.seconds},
                        {"snapshot_lsn", r.snapshot_lsn},
                        {"snapshot_bytes", r.snapshot_bytes},
                        {"records", r.records},
                        {"record_bytes", r.record_bytes},
                        {"truncated_bytes", r.truncated_bytes},
                        {"corrupt_snapshots", r.corrupt_snapshots}};
  json waits = json::object();
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    for (const auto& [policy, w] : waits_) {
      waits[policy] = {{"seconds_total", w->total_seconds}, {"fraction", w->fraction}};
    }
  }
  status["trainer_wait"] = std::move(waits);
  return status;
}

// ---- Metrics. ----

void DataflowService::RecordBatchWait(const std::string& policy, double seconds, bool served) {
  std::lock_guard<std::mutex> lock(wait_mu_);
  auto it = waits_.find(policy);
  if (it == waits_.end()) return;
  PolicyWait& w = *it->second;
  w.total_seconds += seconds;
  w.since_serve_seconds += seconds;
  if (wait_seconds_ != nullptr) wait_seconds_->WithLabels({policy}).Inc(seconds);
  if (!served) return;
  const auto now = SteadyClock::now();
  if (w.has_served) {
    const double step = std::chrono::duration<double>(now - w.last_serve).count();
    if (step > 0) w.fraction = std::clamp(w.since_serve_seconds / step, 0.0, 1.0);
    if (wait_fraction_ != nullptr) wait_fraction_->WithLabels({policy}).Set(w.fraction);
  }
  w.has_served = true;
  w.last_serve = now;
  w.since_serve_seconds = 0;
}

json DataflowService::CachedCoreStatus() const {
  if (!ready_.load(std::memory_order_acquire) || !core_) return json::object();
  std::lock_guard<std::mutex> lock(cache_mu_);
  const auto now = SteadyClock::now();
  if (cache_.is_null() || now - cache_time_ > kStatusCacheTtl) {
    cache_ = core_->StatusJson();
    cache_time_ = now;
  }
  return cache_;
}

namespace {
double NumberAt(const json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  if (j.is_number()) return j.get<double>();
  return 0.0;
}
}  // namespace

double DataflowService::PolicyValue(const std::string& policy, const char* field) const {
  const json status = CachedCoreStatus();
  auto p = status.find("policies");
  if (p == status.end() || !p->contains(policy)) return 0;
  const json& j = (*p)[policy];
  return j.contains(field) ? NumberAt(j[field]) : 0;
}

double DataflowService::CoreValue(const char* group, const char* field) const {
  const json status = CachedCoreStatus();
  const json* j = &status;
  if (group != nullptr) {
    auto it = status.find(group);
    if (it == status.end()) return 0;
    j = &*it;
  }
  auto it = j->find(field);
  return it == j->end() ? 0 : NumberAt(*it);
}

void DataflowService::RegisterMetrics() {
  metrics::Registry& r = *registry_;
  ingest_bytes_ = &r.AddCounter("sluice_dataflow_ingest_bytes_total",
                                "Bytes of trajectory-group frames accepted (duplicates excluded).")
                       .WithLabels({});
  submits_ = &r.AddCounter("sluice_dataflow_submits_total",
                           "POST /v1/trajectories requests by result (accepted, late, "
                           "duplicate, rejected).",
                           {"result"});
  wait_seconds_ = &r.AddCounter("sluice_dataflow_trainer_wait_seconds_total",
                                "Seconds trainers spent blocked in GET /v1/batches.", {"policy"});
  wait_fraction_ =
      &r.AddGauge("sluice_dataflow_trainer_wait_fraction",
                  "Fraction of the last training step the policy's trainer spent waiting for its "
                  "batch (wait since the previous served batch / time between the two).",
                  {"policy"});
  batch_requests_ = &r.AddCounter("sluice_dataflow_batch_requests_total",
                                  "GET /v1/batches requests by outcome (served, empty, drained).",
                                  {"policy", "outcome"});
  lease_waits_refused_ =
      &r.AddCounter("sluice_dataflow_lease_waits_refused_total",
                    "Lease long polls answered 429 because max_waiting_leases were waiting.")
           .WithLabels({});
  snapshots_total_ =
      &r.AddCounter("sluice_dataflow_snapshots_total", "Snapshots written to the log directory.")
           .WithLabels({});
  recovery_seconds_ = &r.AddGauge("sluice_dataflow_recovery_seconds",
                                  "Time the last start spent replaying the log.")
                           .WithLabels({});
  for (const std::string& p : config_.policies) {
    wait_seconds_->WithLabels({p});
    wait_fraction_->WithLabels({p});
  }

  auto add = [this](metrics::CallbackFamily& family, std::vector<std::string> labels,
                    metrics::CallbackFamily::ValueFunction fn) {
    family.Set(labels, std::move(fn));
    callbacks_.emplace_back(&family, std::move(labels));
  };
  struct PolicyMetric {
    const char* name;
    const char* field;
    const char* help;
    bool counter;
  };
  static constexpr PolicyMetric kPolicyMetrics[] = {
      {"sluice_dataflow_buffered_groups", "buffered_groups", "Groups buffered for training.",
       false},
      {"sluice_dataflow_buffered_samples", "buffered_samples", "Samples buffered for training.",
       false},
      {"sluice_dataflow_unacked_batches", "unacked_batches", "Served batches not yet acknowledged.",
       false},
      {"sluice_dataflow_held_batches", "held_batches",
       "Batches acknowledged held, kept until the trainer's checkpoint releases them.", false},
      {"sluice_dataflow_policy_version", "version", "Newest announced weight version.", false},
      {"sluice_dataflow_policy_lag", "buffer_lag",
       "Versions the oldest buffered data is behind the newest announced version (0 with an "
       "empty buffer); groups go stale above maxStaleness.",
       false},
      {"sluice_dataflow_accepted_groups_total", "accepted_groups",
       "(prompt, policy) groups accepted into the buffer.", true},
      {"sluice_dataflow_accepted_samples_total", "accepted_samples",
       "Samples accepted into the buffer.", true},
      {"sluice_dataflow_filtered_groups_total", "filtered_groups", "Groups dropped by filters.",
       true},
      {"sluice_dataflow_filtered_samples_total", "filtered_samples", "Samples removed by filters.",
       true},
      {"sluice_dataflow_stale_dropped_groups_total", "stale_dropped_groups",
       "Groups dropped as stale at serve time.", true},
      {"sluice_dataflow_stale_dropped_samples_total", "stale_dropped_samples",
       "Samples dropped as stale at serve time.", true},
      {"sluice_dataflow_served_batches_total", "served_batches", "Batches served (first serve).",
       true},
      {"sluice_dataflow_reserved_batches_total", "reserved_batches",
       "Unacknowledged batches served again after the ack timeout.", true},
      {"sluice_dataflow_acked_batches_total", "acked_batches", "Batches acknowledged.", true},
      {"sluice_dataflow_drained", "drained",
       "1 once the dataset is exhausted and no batch can be served to the policy again.", false},
      {"sluice_dataflow_replayed_groups_total", "replayed_groups",
       "Groups served again from replay memory.", true},
  };
  for (const PolicyMetric& m : kPolicyMetrics) {
    metrics::CallbackFamily& family = m.counter ? r.AddCallbackCounter(m.name, m.help, {"policy"})
                                                : r.AddCallbackGauge(m.name, m.help, {"policy"});
    for (const std::string& p : config_.policies) {
      add(family, {p}, [this, p, field = m.field] { return PolicyValue(p, field); });
    }
  }
  metrics::CallbackFamily& pending = r.AddCallbackGauge(
      "sluice_dataflow_pending_tasks",
      "Tasks waiting to be leased (re-queued train tasks, queued eval tasks).", {"kind"});
  add(pending, {"train"}, [this] { return CoreValue(nullptr, "pending_tasks"); });
  add(pending, {"eval"}, [this] { return CoreValue(nullptr, "pending_eval_tasks"); });
  add(r.AddCallbackGauge("sluice_dataflow_leases_in_flight", "Leases held by rollout workers."), {},
      [this] { return CoreValue(nullptr, "leases_in_flight"); });
  add(r.AddCallbackGauge("sluice_dataflow_backpressure",
                         "1 while admission control lets no new train task be leased."),
      {}, [this] { return CoreValue(nullptr, "backpressure"); });
  add(r.AddCallbackGauge("sluice_dataflow_admission_room",
                         "Train tasks admission control would still lease."),
      {}, [this] { return CoreValue(nullptr, "admission_room"); });
  add(r.AddCallbackGauge("sluice_dataflow_rollout_demand",
                         "Tasks the rollout pool could be running now: leases in flight, queued "
                         "eval tasks, and train tasks admission control would still lease (as "
                         "many as remain). RolloutPool autoscaling divides it by the tasks one "
                         "replica runs at once."),
      {}, [this] { return CoreValue(nullptr, "rollout_demand"); });
  add(r.AddCallbackGauge("sluice_dataflow_epoch", "Current dataset epoch (0-based)."), {},
      [this] { return CoreValue(nullptr, "epoch"); });
  add(r.AddCallbackGauge("sluice_dataflow_exhausted",
                         "1 once every epoch's prompts are handed out and no train task is "
                         "pending or leased."),
      {}, [this] { return CoreValue(nullptr, "exhausted"); });
  add(r.AddCallbackCounter("sluice_dataflow_prompts_consumed_total",
                           "Prompts taken from the dataset (leased or skipped by the curator)."),
      {}, [this] { return CoreValue("prompts", "consumed"); });
  add(r.AddCallbackCounter("sluice_dataflow_lease_expiries_total", "Leases that expired."), {},
      [this] { return CoreValue("leases", "expired"); });
  add(r.AddCallbackCounter("sluice_dataflow_leases_granted_total", "Leases granted."), {},
      [this] { return CoreValue("leases", "granted"); });
  add(r.AddCallbackCounter("sluice_dataflow_tasks_failed_total",
                           "Tasks set aside after max attempts."),
      {}, [this] { return CoreValue("leases", "tasks_failed"); });
  add(r.AddCallbackGauge("sluice_dataflow_wal_bytes_since_snapshot",
                         "Log bytes a restart would replay after the newest snapshot."),
      {}, [this] {
        return ready_.load() && wal_ ? static_cast<double>(wal_->BytesSinceSnapshot()) : 0.0;
      });
}

}  // namespace sluice::dataflow
