// DataflowCore: the state machine of the `sluice-dataflow` service, without HTTP and without file
// I/O. It hands prompts to rollout workers as leased tasks, ingests their finished groups into one
// buffer per policy (splitting, filters, group statistics, curator feedback), serves training
// batches (staleness, fifo/edf order, replay, version barrier) that must be acknowledged, runs
// periodic evaluation, and describes every state change as a Record so the service can make it
// durable in its write-ahead log and rebuild the same state after a crash.
//
// Semantics (docs/dataflow.md, "The dataflow core", has the long form):
//  - Tasks. A train task is one train-split prompt to be rolled out group_size times; an eval task
//    is one eval-split prompt rolled out eval.k times with eval sampling. Task ids are
//    "task-<n>", lease ids "lease-<n>", batch ids "batch-<n>" (n counts from 1, never reused).
//    One lease holds one task. Each issuance of a task increments its `attempt` (1 for the first
//    lease), so (task_id, attempt) names one lease.
//  - Lease order: pending eval tasks first, then re-queued train tasks (front first), then new
//    prompts from the dataset cursor, each offered to the prompt curator with a uniform draw from
//    the core's seeded generator; after kMaxCuratorSkips consecutive skips in one call the next
//    prompt is leased regardless (as the reference's rejection-storm guard). A skipped prompt is
//    consumed for this epoch.
//  - Admission control (train tasks only, algorithms/admission.h): a lease is granted only while,
//    for every policy, buffered groups + groups in unacknowledged batches (fresh ones, not
//    replay) + train tasks under lease < min(capacity_groups, (max_staleness + 1) x fresh groups
//    per batch), so the pool generates no more than the trainer consumes before it goes stale.
//    A worker's lag counts from the version the trainer holds: one past the announced one
//    between an ack and the next announcement.
//    `backpressure` is on when that leaves no room. The log records how many tasks each lease
//    room each lease saw, so recovery re-grants exactly those tasks whatever today's limits are.
//  - Expiry: a lease whose deadline (wall clock) has passed is removed by ExpireLeases (also run at
//    the start of every Lease); its task counts a failure and goes back to the front of its queue,
//    or, after max_attempts failures, is set aside with the error (status "failed_tasks"). Release
//    without an error puts the task back without counting a failure; with an error it counts one.
//  - Submit is idempotent by task: the first submit of any issued attempt of a task wins (also a
//    late one whose lease expired, whose task was re-issued, re-queued or set aside: the task is
//    then withdrawn and any newer lease on it cancelled); any later submit for that task is a
//    duplicate, acknowledged and ignored. Submits for unknown tasks or never-issued attempts are
//    errors. Sample prompt ids are set to the task's row id.
//  - Batches. TakeBatch(policy, n): first, an unacknowledged batch of that policy served at least
//    ack_timeout ago is served again, unchanged and with the same id (so either ack of it works);
//    else, when the version barrier allows, floor(n · replayRatio) groups come from replay memory
//    and the rest must be fresh: stale groups met on the way are dropped (or down-weighted), and
//    if fewer than the fresh count remain nothing is served (the HTTP layer waits). Fresh groups
//    come first. On Ack the batch's fresh groups enter replay memory (consumed = trained on).
//  - The end of the data (algorithms/drain_state.h): `exhausted` once every epoch's prompts are
//    handed out and no train task is pending or leased; a policy is `drained` when, besides, it
//    has no unacknowledged batch and no batch can ever be served to it again (too few usable
//    buffered groups, or the version barrier waits for such a policy). Drain() decides it for a
//    request, StatusJson reports it, WaitForBatch returns once it holds.
//  - Versions. Every policy starts at version 0 (initial weights, not announced). Announcements
//    must increase (re-announcing the current version with the same url/digest/delta_base is an
//    idempotent no-op; with the same non-empty digest and evaluate flag but another url or
//    delta_base it moves the version: a restarted trainer serving the same image elsewhere). A
//    version number names one weight image: the current number with another digest is a
//    Conflict that says so. Announcements of the first policy in `policies` (the primary policy)
//    also drive the curator's OnVersion and evaluation: every eval.every_versions versions one eval
//    round of all eval rows is queued; when all its tasks are done or set aside it is scored
//    (avg@k, pass@k; eval_metrics.h) into the status's "last_eval". An eval completion is correct
//    when it earns the full reward (>= 1 − 1e-9): partial credit counts in mean_reward only.
//    An announcement of the primary policy with `evaluate` set also queues a round at its version
//    when evaluation is configured (every_versions > 0 or at_start; otherwise, and for other
//    policies, the flag does nothing), one round even when every_versions would queue one too. A
//    trainer that ran a warm start (SFT) before RL announces the warm-started weights this way,
//    so a round measures exactly the model RL starts from. The flag is part of the VersionInfo:
//    kept in records and snapshots, and compared by the idempotent re-announce. With the version
//    barrier and several policies, rounds follow the lowest version of all policies instead, so
//    no round runs while a policy still holds older weights (EvalRoundToQueue, eval_trigger.h).
//  - Curator feedback uses trajectory-level rewards: per sample, the primary policy's entry of
//    policy_rewards when present, else policy_rewards[0], else `reward`.
//
// Durability. Every call that changes state hands exactly one Record to the RecordSink (under the
// core's lock, in state-change order) before it returns; calls that change nothing emit none.
// Records are commands: the call's inputs plus the wall-clock time it ran at, so ApplyRecord
// re-executes the call at that time and, because the core is deterministic (its random generator
// is part of the state), reaches the same state. Snapshot() serializes the whole state (CBOR);
// RestoreSnapshot(s) followed by ApplyRecord of every later record reproduces the state of the
// original core, including the next batches it would serve.
//
// Time: deadlines and ack timeouts use Clock::WallNow() (nanoseconds since the Unix epoch in
// records and snapshots), so they stay meaningful across a process restart.
//
// Ownership: the core does not own the Dataset or the Clock; both must outlive it. Thread safety:
// every public method may be called from any thread; one mutex serializes them. The sink runs
// under that mutex and must not call back into the core.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "workers/dataflow/algorithms/admission.h"
#include "workers/dataflow/algorithms/curators.h"
#include "workers/dataflow/algorithms/drain_state.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/group_stats.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/buffered_group.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/recent_ids.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

// Consecutive curator skips after which one Lease call leases the next prompt anyway.
inline constexpr int kMaxCuratorSkips = 256;

struct EvalOptions {
  int64_t every_versions = 0;  // Evaluate at primary versions divisible by this; 0: off.
  int64_t k = 1;               // Completions per eval prompt (pass@k's k); >= 1.
  // Eval rows per round; 0 or more than the split: all. A subset is the same rows every round
  // (EvalRowSubset), so rounds at different versions are comparable.
  int64_t samples = 0;
  // Also evaluate the initial weights (version 0): a round is queued when the core is created.
  bool at_start = false;
  // Evaluate rows of the train split (samples of them) instead of the held-out eval split.
  bool from_train = false;
  // Merged over DataflowConfig::sampling (JSON merge patch) for eval tasks, e.g.
  // {"temperature": 0.6}.
  nlohmann::json sampling = nlohmann::json::object();
};

// Resolved by the service from the Dataflow CR.
struct DataflowConfig {
  std::vector<std::string> policies;  // Policies of the workflow; non-empty, unique. [0] = primary.
  int64_t group_size = 8;             // Completions per train task; >= 1.
  nlohmann::json sampling = nlohmann::json::object();  // Passed to tasks verbatim.
  nlohmann::json workflow = nlohmann::json::object();  // Passed to tasks verbatim.
  std::chrono::seconds lease_duration{300};            // > 0.
  int max_attempts = 3;                                // Failures before a task is set aside.
  int64_t capacity_groups = 256;                       // Admission limit per policy; >= 1.
  int64_t groups_per_batch = 32;  // TakeBatch's size when asked for <= 0 groups; >= 1.
  // Batch sizes of policies whose trainers take other than groups_per_batch (spec.batch
  // .perPolicy); admission's staleness budget is counted in these batches (admission.h).
  std::map<std::string, int64_t> groups_per_batch_by_policy;
  std::chrono::seconds ack_timeout{600};  // Unacknowledged batches are re-served after; > 0.
  GroupStatsOptions group_stats;
  std::vector<FilterSpec> filters;  // Applied in order to each (prompt, policy) group.
  std::string curator = "accept-all";
  nlohmann::json curator_options = nlohmann::json::object();
  StalenessOptions staleness;
  ReplayOptions replay;
  bool version_barrier = false;
  EvalOptions eval;
  // Dataset cursor (spec.dataset): visiting order and number of passes over the train split.
  bool shuffle = true;
  uint64_t shuffle_seed = 0;
  int64_t epochs = 1;
  // How many completed task ids and acked batch ids are remembered (RecentIds), so a repeated
  // submit is answered "duplicate" and a repeated ack is a no-op. Older ones are forgotten,
  // oldest first: a submit for a forgotten task is NotFound, an ack of a forgotten batch too.
  // Bounded so memory does not grow with dataset size x epochs; >= 1.
  int64_t remember_completed_tasks = int64_t{1} << 20;
  int64_t remember_acked_batches = int64_t{1} << 16;
};

// A policy weight version as announced by its trainer.
struct VersionInfo {
  int64_t number = 0;       // >= 1 when announced.
  std::string url;          // Where workers fetch the weights.
  std::string digest;       // Of the full weights.
  int64_t delta_base = -1;  // Version a sparse delta at `url` applies to; -1: full weights.
  // Queue an eval round at this version (primary policy, evaluation configured; see "Versions").
  bool evaluate = false;
  friend bool operator==(const VersionInfo&, const VersionInfo&) = default;
};

struct PolicyVersion {
  std::string policy;
  VersionInfo version;
};

struct LeaseRequest {
  std::string worker_id;
  std::string pool;
  std::string region;
  std::map<std::string, int64_t> hosted_policies;  // Policy → loaded version.
  int64_t capacity = 1;                            // Tasks wanted; <= 0 leases nothing.
};

struct LeasedTask {
  std::string task_id;
  std::string lease_id;
  uint32_t attempt = 1;
  bool eval = false;
  std::string prompt_id;
  std::string prompt;
  std::string answer;
  std::string dataset;
  nlohmann::json row;   // The dataset row, verbatim.
  int64_t samples = 0;  // Completions to generate: group_size, or eval.k.
  nlohmann::json sampling;
  nlohmann::json workflow;
  Clock::WallTime deadline;
};

struct LeaseReply {
  std::vector<LeasedTask> tasks;
  // Newest announced version of every hosted policy of this experiment (policy order).
  std::vector<PolicyVersion> versions;
  bool backpressure = false;  // Admission control left no room after this call.
};

struct SubmitResult {
  bool duplicate = false;  // Already had a winning submit; nothing changed.
  bool late = false;       // Accepted although its lease was no longer the task's current one.
  bool eval = false;
  int64_t groups_kept = 0;  // (prompt, policy) groups queued.
  int64_t groups_filtered = 0;
  int64_t samples_kept = 0;
  int64_t samples_filtered = 0;
};

// Receives every state change as a Record (wal_records.h) for the write-ahead log.
using RecordSink = std::function<void(const Record&)>;

// A batch taken for the wire (DataflowCore::TakeBatchFrame).
struct BatchFrame {
  std::string batch_id;
  BatchFrameWriter writer;  // Its frame, pulled by the caller.
};

class DataflowCore {
 public:
  // InvalidArgument (naming the config field) for a bad config; the dataset must have at least
  // one train row.
  static Result<std::unique_ptr<DataflowCore>> Create(DataflowConfig config, const Dataset* dataset,
                                                      Clock* clock, uint64_t seed,
                                                      RecordSink sink = nullptr);

  DataflowCore(const DataflowCore&) = delete;
  DataflowCore& operator=(const DataflowCore&) = delete;
  ~DataflowCore();

  // Leases up to request.capacity tasks (see the header comment). Zero tasks when there is no
  // work or admission control is closed.
  LeaseReply Lease(const LeaseRequest& request);
  // NotFound for an unknown (finished, released, expired and swept) lease; Gone when its deadline
  // has passed (ExpireLeases will re-queue it).
  Status Renew(std::string_view lease_id);
  // Returns the task to the front of its queue. A non-empty `error` counts as a failed attempt.
  Status Release(std::string_view lease_id, std::string_view error = {});
  // Expires every lease whose deadline has passed; returns how many.
  int64_t ExpireLeases();

  // Ingests a finished group. `encoded`, when given, must be the group's wire encoding (the
  // service has it from the request body) and is used as the record payload instead of
  // re-encoding. InvalidArgument for malformed groups or policies outside the config, NotFound for
  // an unknown task; nothing changes then.
  Result<SubmitResult> Submit(const TrajectoryGroup& group, std::string_view encoded = {});

  // A batch of `groups` groups (<= 0: groups_per_batch) for `policy`, or nullopt when none can be
  // served now. NotFound for an unknown policy.
  Result<std::optional<Batch>> TakeBatch(std::string_view policy, int64_t groups);
  // TakeBatch for the wire: the batch's id and a writer of its frame (client/trajectory_codec.h),
  // or nullopt when none can be served now. Only the take and the small fields are done under the
  // core's lock; the writer copies the tokens, masks, log-probs and versions straight from the
  // buffered groups when the caller pulls them, after the lock is released, with no intermediate
  // Batch (the writer holds the batch, so an Ack meanwhile cannot change or free them). The bytes
  // are exactly those of EncodeBatch of the Batch TakeBatch would have returned; so a re-served
  // batch has the same bytes as its first serve except `stats.serves` (and the frame's CRC).
  // Errors as TakeBatch, and Internal when the batch cannot be encoded (over the frame's size
  // limit); the batch has then been taken (and recorded) all the same, as when EncodeBatch of
  // TakeBatch's result fails.
  Result<std::optional<BatchFrame>> TakeBatchFrame(std::string_view policy, int64_t groups);
  // OK also for a batch already acknowledged; NotFound for an id never served. A held batch
  // (AckHeld) is released.
  Status Ack(std::string_view batch_id);

  // Held acknowledgements: exactly-once training across trainer crashes (docs/dataflow.md,
  // "Held batches"). A trainer that checkpoints acknowledges each batch it trained with
  // AckHeld: the batch counts as acknowledged (its fresh groups enter replay memory, admission
  // stops counting it) but is kept, numbered by its policy's hold sequence (1, 2, ...), until the
  // weights that trained on it are durable. The trainer's checkpoint records the newest number it
  // holds; ReleaseHeld after the checkpoint forgets the batches through it; ResumeHeld, when a
  // trainer (re)starts from that checkpoint, forgets those too and takes back every newer held
  // batch: un-acknowledged again (its fresh groups leave replay memory, the ack counters go
  // back), it is served again, unchanged and with the same id, from the next TakeBatch on, in
  // the order they were trained, then every unacknowledged batch of the policy (the dead
  // trainer's batch in hand).
  //
  // AckHeld returns the batch's hold number (the same number again for a batch already held),
  // or 0 for a batch already acknowledged for good (durable already); NotFound as Ack.
  Result<int64_t> AckHeld(std::string_view batch_id);
  // Forgets the held batches of `policy` numbered <= through; returns how many. NotFound for an
  // unknown policy, InvalidArgument for through < 0.
  Result<int64_t> ReleaseHeld(std::string_view policy, int64_t through);
  // Releases through `through`, takes back the newer held batches and makes every
  // unacknowledged batch of `policy` due now; returns how many held batches were taken back.
  // Errors as ReleaseHeld.
  Result<int64_t> ResumeHeld(std::string_view policy, int64_t through);
  // NotFound for an unknown policy; Conflict when the number does not increase (except the
  // idempotent re-announce and the move above).
  Status AnnounceVersion(std::string_view policy, const VersionInfo& version);

  nlohmann::json StatusJson() const;
  // Whether `policy` is drained (see the header comment) for batches of `groups` groups (<= 0:
  // its batch size, groups_per_batch_by_policy or groups_per_batch), and why. NotFound for an
  // unknown policy.
  Result<PolicyDrain> Drain(std::string_view policy, int64_t groups) const;
  bool Backpressure() const;
  int64_t CurrentVersion(std::string_view policy) const;  // -1 for an unknown policy.
  // The newest announcement of every policy that has announced one, in policy order (what a lease
  // reply's versions would list for a worker hosting them all). Changes nothing.
  std::vector<PolicyVersion> AnnouncedVersions() const;

  // Long-poll helpers for the HTTP layer: block (in real time, re-checking every 50 ms and on
  // every state change) until a Lease could hand out work / TakeBatch could serve `groups`
  // groups (or the policy is drained: Drain tells which), `cancel` becomes true, or `deadline`
  // passes. Return whether work is available (WaitForBatch: or the policy is drained).
  // WaitForWork judges admission for `request` (its weight lag; null: a worker with the newest
  // weights), and also returns true once a policy the request hosts announces a version newer
  // than the request holds: the worker must load it before admission can open for it.
  bool WaitForWork(const std::atomic<bool>& cancel, std::chrono::steady_clock::time_point deadline,
                   const LeaseRequest* request = nullptr);
  bool WaitForBatch(std::string_view policy, int64_t groups, const std::atomic<bool>& cancel,
                    std::chrono::steady_clock::time_point deadline);

  // Recovery: re-executes one record (no sink call). Corruption for an undecodable record or one
  // whose re-execution fails.
  Status ApplyRecord(const Record& record);
  // The whole state. `under_lock`, when given, runs while the core's lock is held, so the service
  // can read its log's last LSN consistently with the snapshot.
  std::string Snapshot(const std::function<void()>& under_lock = nullptr) const;
  // Replaces the whole state. Corruption for malformed bytes; Conflict when the snapshot was
  // taken with a different dataset (fingerprint) or different policies.
  Status RestoreSnapshot(std::string_view snapshot);

 private:
  struct Task;
  struct LeaseEntry;
  struct PolicyState;
  struct OutstandingBatch;
  struct EvalRound;
  struct Counters;

  DataflowCore(DataflowConfig config, const Dataset* dataset, Clock* clock, uint64_t seed,
               RecordSink sink, std::unique_ptr<PromptCurator> curator, FilterChain chain,
               ReplayMemory replay_prototype);

  // *Locked: mu_ held; `now_ns` is the wall time of the call; they set dirty_ on any change.
  // `recorded_room`: replaying the log, the admission room the original call saw (the limits
  // may have changed since), so the replay leases exactly what it leased. `*room_used` (when
  // not null) gets the room this call used, for the log. `capacity_only`: replaying a record
  // written before rooms were recorded (AdmissionLocked).
  LeaseReply LeaseLocked(const LeaseRequest& request, int64_t now_ns,
                         std::optional<int64_t> recorded_room = std::nullopt,
                         int64_t* room_used = nullptr, bool capacity_only = false);
  Status RenewLocked(std::string_view lease_id, int64_t now_ns);
  Status ReleaseLocked(std::string_view lease_id, std::string_view error);
  int64_t ExpireLocked(int64_t now_ns);
  Result<SubmitResult> SubmitLocked(const TrajectoryGroup& group);
  // The batch served (owned by outstanding_), or null when none can be served now.
  Result<OutstandingBatch*> TakeBatchLocked(std::string_view policy, int64_t groups,
                                            int64_t now_ns);
  // TakeBatchLocked at the current time, emitting its record when it changed state.
  Result<OutstandingBatch*> TakeAndLogLocked(std::string_view policy, int64_t groups);
  // `hold`: AckHeld (returns the hold number); else Ack (returns 0).
  Result<int64_t> AckLocked(std::string_view batch_id, bool hold = false);
  Result<int64_t> ReleaseHeldLocked(std::string_view policy, int64_t through);
  Result<int64_t> ResumeHeldLocked(std::string_view policy, int64_t through);
  // The replay-memory and counter effects of acknowledging `b` (copying its groups when
  // `copy`), and their undoing.
  void ConsumeLocked(PolicyState& p, OutstandingBatch& b, bool copy);
  void UnconsumeLocked(PolicyState& p, const OutstandingBatch& b);
  Status AnnounceLocked(std::string_view policy, const VersionInfo& version);
  // Whether `task` reads its prompt from the eval split (an eval task, unless eval.from_train).
  bool EvalFromEvalSplit(const Task& task) const;
  const PromptRow& RowOf(const Task& task) const;
  // Queues an eval round of eval_rows_ for `policy` at `version` (nothing without eval rows).
  void QueueEvalRoundLocked(const PolicyState& policy, int64_t version);

  void Emit(RecordType type, nlohmann::json payload);
  int64_t NowNs() const;
  // `request`: the leasing worker, whose weight lag shrinks the staleness budget; null: a
  // worker with the newest weights (status, backpressure). `capacity_only`: the limit before the
  // staleness budget existed, for replaying lease records that do not carry their room.
  AdmissionDecision AdmissionLocked(const LeaseRequest* request = nullptr,
                                    bool capacity_only = false) const;
  bool HasWorkLocked(int64_t now_ns, const LeaseRequest* request = nullptr) const;
  // Whether a policy `request` hosts has announced a version newer than the request holds.
  bool NewerVersionLocked(const LeaseRequest& request) const;
  bool BatchReadyLocked(std::string_view policy, int64_t groups, int64_t now_ns) const;
  // The drain decision's inputs, `policy` asking for batches of `groups` (<= 0: its batch size;
  // other policies: theirs). Per-policy figures cost a scan of every buffer.
  DrainInput DrainInputLocked(std::string_view policy, int64_t groups) const;
  Result<PolicyDrain> DrainLocked(std::string_view policy, int64_t groups) const;
  PolicyState* FindPolicy(std::string_view name);
  const PolicyState* FindPolicy(std::string_view name) const;
  LeasedTask IssueLocked(Task& task, const std::string& worker_id, int64_t now_ns);
  void FailAttemptLocked(Task& task, const std::string& error);
  void FinishEvalTaskLocked(int64_t round_id, const std::optional<EvalItem>& item);
  double TrajectoryReward(const Sample& s) const;
  Batch BuildBatch(const OutstandingBatch& b) const;
  // The batch's stats as served: its stats at take time plus the serve count.
  static nlohmann::json ServedStats(const OutstandingBatch& b);
  Result<BatchFrameWriter> FrameWriterLocked(const std::shared_ptr<OutstandingBatch>& b) const;
  nlohmann::json SnapshotJsonLocked() const;
  // A batch (outstanding or held) in snapshots, and back (Corruption naming the batch).
  static nlohmann::json BatchToJson(const OutstandingBatch& b);
  static Result<std::shared_ptr<OutstandingBatch>> BatchFromJson(const nlohmann::json& j);
  bool Wait(const std::atomic<bool>& cancel, std::chrono::steady_clock::time_point deadline,
            const std::function<bool()>& ready);

  const DataflowConfig config_;
  const Dataset* const dataset_;
  Clock* const clock_;
  const RecordSink sink_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // Notified after every state change.
  bool dirty_ = false;               // The current call changed state.
  bool replaying_ = false;           // In ApplyRecord: no sink calls.

  std::mt19937_64 rng_;
  DatasetCursor cursor_;
  std::unique_ptr<PromptCurator> curator_;
  FilterChain chain_;
  std::map<std::string, std::unique_ptr<Task>> tasks_;  // Pending, leased and set-aside tasks.
  std::deque<std::string> pending_;                     // Train task ids, front first.
  std::deque<std::string> eval_pending_;                // Eval task ids, front first.
  RecentIds completed_;  // Tasks with a winning submit (the newest remember_completed_tasks).
  std::map<std::string, std::unique_ptr<LeaseEntry>> leases_;
  std::vector<std::unique_ptr<PolicyState>> policies_;  // Config order.
  // Shared with the frame writers of batches being sent (TakeBatchFrame).
  std::map<std::string, std::shared_ptr<OutstandingBatch>> outstanding_;
  RecentIds acked_;  // The newest remember_acked_batches acked batch ids.
  std::map<int64_t, std::unique_ptr<EvalRound>> eval_rounds_;
  std::vector<size_t> eval_rows_;  // Rows of every eval round (EvalRowSubset).
  nlohmann::json last_eval_;       // Null until a round completes.
  std::unique_ptr<Counters> counters_;
};

// The eval rows a round covers: all of [0, eval_size) when samples is 0 or >= eval_size, else
// `samples` of them chosen by a Fisher-Yates shuffle driven by SplitMix64(seed + i), ascending.
// Portable: the same rows on every machine for a seed.
std::vector<size_t> EvalRowSubset(size_t eval_size, int64_t samples, uint64_t seed);

}  // namespace sluice::dataflow
