#include "workers/dataflow/dataflow_core.h"

#include <algorithm>
#include <exception>
#include <numeric>
#include <sstream>
#include <utility>

#include "common/splitmix64.h"
#include "workers/dataflow/algorithms/eval_episodes.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/algorithms/eval_trigger.h"
#include "workers/dataflow/algorithms/splitting.h"
#include "workers/dataflow/algorithms/version_barrier.h"

namespace sluice::dataflow {

namespace {

using nlohmann::json;

int64_t ToNs(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Clock::WallTime FromNs(int64_t ns) {
  return Clock::WallTime(
      std::chrono::duration_cast<Clock::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

int64_t Ns(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(s).count();
}

Status Prefixed(const Status& s, const std::string& prefix) {
  return Status(s.code(), s.message(), s.field().empty() ? prefix : prefix + "." + s.field());
}

}  // namespace

// ---- Private state types. ----

struct DataflowCore::Task {
  enum class State { kPending = 0, kLeased = 1, kFailed = 2 };
  std::string id;
  bool eval = false;
  uint64_t row = 0;        // Index into the train or eval split.
  int64_t eval_round = 0;  // Eval tasks: their round.
  uint32_t attempt = 0;    // Issuances so far (the newest lease's attempt).
  int failures = 0;        // Expired leases and releases with an error.
  std::string last_error;
  State state = State::kPending;
  std::string lease_id;  // While leased.
};

struct DataflowCore::LeaseEntry {
  std::string id;
  uint64_t seq = 0;  // The n of "lease-<n>".
  std::string task_id;
  std::string worker_id;
  uint32_t attempt = 0;
  int64_t deadline_ns = 0;  // Wall clock.
};

namespace {

struct PolicyCounters {
  int64_t accepted_groups = 0;
  int64_t accepted_samples = 0;
  int64_t filtered_groups = 0;
  int64_t filtered_samples = 0;
  int64_t stale_dropped_groups = 0;
  int64_t stale_dropped_samples = 0;
  int64_t stale_dropped_tokens = 0;
  int64_t down_weighted_samples = 0;
  int64_t served_batches = 0;
  int64_t served_groups = 0;
  int64_t reserved_batches = 0;
  int64_t replayed_groups = 0;
  int64_t acked_batches = 0;
  int64_t acked_groups = 0;
};

constexpr std::pair<const char*, int64_t PolicyCounters::*> kPolicyCounterFields[] = {
    {"accepted_groups", &PolicyCounters::accepted_groups},
    {"accepted_samples", &PolicyCounters::accepted_samples},
    {"filtered_groups", &PolicyCounters::filtered_groups},
    {"filtered_samples", &PolicyCounters::filtered_samples},
    {"stale_dropped_groups", &PolicyCounters::stale_dropped_groups},
    {"stale_dropped_samples", &PolicyCounters::stale_dropped_samples},
    {"stale_dropped_tokens", &PolicyCounters::stale_dropped_tokens},
    {"down_weighted_samples", &PolicyCounters::down_weighted_samples},
    {"served_batches", &PolicyCounters::served_batches},
    {"served_groups", &PolicyCounters::served_groups},
    {"reserved_batches", &PolicyCounters::reserved_batches},
    {"replayed_groups", &PolicyCounters::replayed_groups},
    {"acked_batches", &PolicyCounters::acked_batches},
    {"acked_groups", &PolicyCounters::acked_groups},
};

}  // namespace

struct DataflowCore::PolicyState {
  std::string name;
  VersionInfo version;  // number 0 until announced.
  bool announced = false;
  std::vector<BufferedGroup> buffer;  // Arrival order.
  ReplayMemory replay;
  std::map<uint64_t, BufferedGroup> replay_groups;  // The groups replay's entries name.
  PolicyCounters counters;
  std::vector<FilterCounters> filters;  // Parallel to the filter chain.
  // A batch was acknowledged after the newest announcement: its trainer is about to announce the
  // version it trained (the drain decision's announce_due).
  bool acked_since_announce = false;
};

struct DataflowCore::OutstandingBatch {
  std::string id;
  std::string policy;
  int64_t version = 0;
  int64_t served_at_ns = 0;
  int64_t serves = 1;
  std::vector<BufferedGroup> groups;  // Fresh groups first, then replayed ones.
  std::vector<uint8_t> replayed;      // Per group.
  int64_t fresh_groups = 0;
  json stats = json::object();
};

struct DataflowCore::EvalRound {
  int64_t id = 0;
  std::string policy;
  int64_t version = 0;
  int64_t outstanding = 0;  // Tasks neither submitted nor set aside.
  int64_t failed = 0;       // Tasks set aside.
  std::vector<EvalItem> items;
};

namespace {

struct CoreCounters {
  int64_t next_task = 0;  // Ids: the n of the last "task-<n>", "lease-<n>", ... handed out.
  int64_t next_lease = 0;
  int64_t next_group = 0;
  int64_t next_arrival = 0;
  int64_t next_batch = 0;
  int64_t next_round = 0;
  int64_t submits_accepted = 0;
  int64_t submits_late = 0;
  int64_t duplicates = 0;
  int64_t leases_granted = 0;
  int64_t lease_expiries = 0;
  int64_t releases = 0;
  int64_t tasks_failed = 0;
  int64_t prompts_skipped = 0;
  int64_t curator_forced = 0;
  int64_t evals_completed = 0;
};

constexpr std::pair<const char*, int64_t CoreCounters::*> kCoreCounterFields[] = {
    {"next_task", &CoreCounters::next_task},
    {"next_lease", &CoreCounters::next_lease},
    {"next_group", &CoreCounters::next_group},
    {"next_arrival", &CoreCounters::next_arrival},
    {"next_batch", &CoreCounters::next_batch},
    {"next_round", &CoreCounters::next_round},
    {"submits_accepted", &CoreCounters::submits_accepted},
    {"submits_late", &CoreCounters::submits_late},
    {"duplicates", &CoreCounters::duplicates},
    {"leases_granted", &CoreCounters::leases_granted},
    {"lease_expiries", &CoreCounters::lease_expiries},
    {"releases", &CoreCounters::releases},
    {"tasks_failed", &CoreCounters::tasks_failed},
    {"prompts_skipped", &CoreCounters::prompts_skipped},
    {"curator_forced", &CoreCounters::curator_forced},
    {"evals_completed", &CoreCounters::evals_completed},
};

template <typename T, size_t N>
json CountersToJson(const T& c, const std::pair<const char*, int64_t T::*> (&fields)[N]) {
  json j = json::object();
  for (const auto& [name, member] : fields) j[name] = c.*member;
  return j;
}

template <typename T, size_t N>
void CountersFromJson(const json& j, T& c,
                      const std::pair<const char*, int64_t T::*> (&fields)[N]) {
  for (const auto& [name, member] : fields) c.*member = j.at(name).template get<int64_t>();
}

json VersionToJson(const VersionInfo& v) {
  return {{"number", v.number},
          {"url", v.url},
          {"digest", v.digest},
          {"delta_base", v.delta_base},
          {"evaluate", v.evaluate}};
}

VersionInfo VersionFromJson(const json& j) {
  VersionInfo v;
  v.number = j.at("number").get<int64_t>();
  v.url = j.at("url").get<std::string>();
  v.digest = j.at("digest").get<std::string>();
  v.delta_base = j.at("delta_base").get<int64_t>();
  // Absent in records and snapshots written before the flag existed.
  if (auto it = j.find("evaluate"); it != j.end()) v.evaluate = it->get<bool>();
  return v;
}

}  // namespace

struct DataflowCore::Counters : CoreCounters {};

// ---- Construction. ----

Result<std::unique_ptr<DataflowCore>> DataflowCore::Create(DataflowConfig config,
                                                           const Dataset* dataset, Clock* clock,
                                                           uint64_t seed, RecordSink sink) {
  if (dataset == nullptr || dataset->train_size() == 0) {
    return Status::InvalidArgument("the dataset needs at least one train row", "dataset");
  }
  if (clock == nullptr) return Status::InvalidArgument("a clock is required", "clock");
  if (config.policies.empty()) {
    return Status::InvalidArgument("at least one policy is required", "policies");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < config.policies.size(); ++i) {
    const std::string field = "policies[" + std::to_string(i) + "]";
    if (config.policies[i].empty()) return Status::InvalidArgument("must not be empty", field);
    if (!seen.insert(config.policies[i]).second) {
      return Status::InvalidArgument("duplicate policy " + config.policies[i], field);
    }
  }
  if (config.group_size < 1) return Status::InvalidArgument("must be >= 1", "groupSize");
  if (config.lease_duration.count() <= 0) {
    return Status::InvalidArgument("must be > 0", "leaseDuration");
  }
  if (config.max_attempts < 1) return Status::InvalidArgument("must be >= 1", "maxAttempts");
  if (config.capacity_groups < 1) return Status::InvalidArgument("must be >= 1", "capacity");
  if (config.groups_per_batch < 1) {
    return Status::InvalidArgument("must be >= 1", "groupsPerBatch");
  }
  if (config.ack_timeout.count() <= 0) return Status::InvalidArgument("must be > 0", "ackTimeout");
  if (config.epochs < 1) return Status::InvalidArgument("must be >= 1", "epochs");
  if (config.remember_completed_tasks < 1) {
    return Status::InvalidArgument("must be >= 1", "remember_completed_tasks");
  }
  if (config.remember_acked_batches < 1) {
    return Status::InvalidArgument("must be >= 1", "remember_acked_batches");
  }
  if (config.eval.k < 1) return Status::InvalidArgument("must be >= 1", "evaluation.k");
  if (config.eval.samples < 0) {
    return Status::InvalidArgument("must be >= 0", "evaluation.samples");
  }
  if (config.eval.every_versions < 0) {
    return Status::InvalidArgument("must be >= 0", "evaluation.everyVersions");
  }
  if (!config.eval.sampling.is_object()) {
    return Status::InvalidArgument("must be an object", "evaluation.sampling");
  }
  SLUICE_RETURN_IF_ERROR(ValidateGroupStatsOptions(config.group_stats));
  SLUICE_RETURN_IF_ERROR(ValidateStalenessOptions(config.staleness));
  SLUICE_ASSIGN_OR_RETURN(FilterChain chain, FilterChain::Create(config.filters));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<PromptCurator> curator,
                          MakeCurator(config.curator, config.curator_options));
  SLUICE_ASSIGN_OR_RETURN(ReplayMemory replay, ReplayMemory::Create(config.replay));
  return std::unique_ptr<DataflowCore>(new DataflowCore(std::move(config), dataset, clock, seed,
                                                        std::move(sink), std::move(curator),
                                                        std::move(chain), std::move(replay)));
}

DataflowCore::DataflowCore(DataflowConfig config, const Dataset* dataset, Clock* clock,
                           uint64_t seed, RecordSink sink, std::unique_ptr<PromptCurator> curator,
                           FilterChain chain, ReplayMemory replay_prototype)
    : config_(std::move(config)),
      dataset_(dataset),
      clock_(clock),
      sink_(std::move(sink)),
      rng_(seed),
      cursor_(*dataset, config_.shuffle, config_.shuffle_seed, config_.epochs),
      curator_(std::move(curator)),
      chain_(std::move(chain)),
      completed_(static_cast<size_t>(config_.remember_completed_tasks)),
      acked_(static_cast<size_t>(config_.remember_acked_batches)),
      counters_(std::make_unique<Counters>()) {
  for (const std::string& name : config_.policies) {
    auto p = std::make_unique<PolicyState>(PolicyState{.name = name,
                                                       .version = {},
                                                       .announced = false,
                                                       .buffer = {},
                                                       .replay = replay_prototype,
                                                       .replay_groups = {},
                                                       .counters = {},
                                                       .filters = chain_.counters(),
                                                       .acked_since_announce = false});
    for (FilterCounters& f : p->filters) f.groups_dropped = f.samples_dropped = 0;
    p->version.number = 0;
    policies_.push_back(std::move(p));
  }
  eval_rows_ =
      EvalRowSubset(config_.eval.from_train ? dataset_->train_size() : dataset_->eval_size(),
                    config_.eval.samples, config_.shuffle_seed);
  // Deterministic, so a recovering core (created afresh, then restored or replayed) starts from
  // the same state as the original did.
  if (config_.eval.at_start) QueueEvalRoundLocked(*policies_.front(), 0);
}

bool DataflowCore::EvalFromEvalSplit(const Task& task) const {
  return task.eval && !config_.eval.from_train;
}

const PromptRow& DataflowCore::RowOf(const Task& task) const {
  return EvalFromEvalSplit(task) ? dataset_->eval(task.row) : dataset_->train(task.row);
}

std::vector<size_t> EvalRowSubset(size_t eval_size, int64_t samples, uint64_t seed) {
  std::vector<size_t> rows(eval_size);
  std::iota(rows.begin(), rows.end(), size_t{0});
  if (samples <= 0 || static_cast<size_t>(samples) >= eval_size) return rows;
  const uint64_t key = SplitMix64(seed ^ 0x6576616c5f726f77ULL);  // "eval_row"
  for (size_t i = eval_size - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(SplitMix64(key + i) % (i + 1));
    std::swap(rows[i], rows[j]);
  }
  rows.resize(static_cast<size_t>(samples));
  std::sort(rows.begin(), rows.end());
  return rows;
}

void DataflowCore::QueueEvalRoundLocked(const PolicyState& policy, int64_t version) {
  if (eval_rows_.empty()) return;
  auto round = std::make_unique<EvalRound>();
  round->id = ++counters_->next_round;
  round->policy = policy.name;
  round->version = version;
  round->outstanding = static_cast<int64_t>(eval_rows_.size());
  for (size_t row : eval_rows_) {
    auto t = std::make_unique<Task>();
    t->id = "task-" + std::to_string(++counters_->next_task);
    t->eval = true;
    t->row = row;
    t->eval_round = round->id;
    eval_pending_.push_back(t->id);
    tasks_.emplace(t->id, std::move(t));
  }
  eval_rounds_.emplace(round->id, std::move(round));
}

DataflowCore::~DataflowCore() = default;

// ---- Helpers. ----

int64_t DataflowCore::NowNs() const { return ToNs(clock_->WallNow()); }

void DataflowCore::Emit(RecordType type, json payload) {
  if (replaying_ || !sink_) return;
  const std::vector<uint8_t> bytes = json::to_cbor(payload);
  sink_(Record{static_cast<uint32_t>(type), std::string(bytes.begin(), bytes.end())});
}

DataflowCore::PolicyState* DataflowCore::FindPolicy(std::string_view name) {
  for (auto& p : policies_) {
    if (p->name == name) return p.get();
  }
  return nullptr;
}

const DataflowCore::PolicyState* DataflowCore::FindPolicy(std::string_view name) const {
  for (const auto& p : policies_) {
    if (p->name == name) return p.get();
  }
  return nullptr;
}

AdmissionDecision DataflowCore::AdmissionLocked(const LeaseRequest* request,
                                                bool capacity_only) const {
  int64_t train_leases = 0;
  for (const auto& [id, lease] : leases_) {
    auto it = tasks_.find(lease->task_id);
    if (it != tasks_.end() && !it->second->eval) ++train_leases;
  }
  std::vector<PolicyLoad> loads;
  loads.reserve(policies_.size());
  for (const auto& p : policies_) {
    PolicyLoad load;
    load.policy = p->name;
    load.buffered = static_cast<int64_t>(p->buffer.size());
    for (const auto& [id, b] : outstanding_) {
      if (b->policy == p->name) load.unacked_fresh += b->fresh_groups;
    }
    auto per_policy = config_.groups_per_batch_by_policy.find(p->name);
    const int64_t groups = per_policy != config_.groups_per_batch_by_policy.end()
                               ? per_policy->second
                               : config_.groups_per_batch;
    load.fresh_per_batch = FreshGroupsPerBatch(groups, config_.replay.replay_ratio);
    if (request != nullptr) {
      auto hosted = request->hosted_policies.find(p->name);
      if (hosted != request->hosted_policies.end()) {
        // Between a batch's ack and its version's announcement the trainer already holds the
        // next version: a lease granted in that window (when workers waiting on backpressure
        // lease, as the ack frees room) is a version behind, and would otherwise go stale.
        const int64_t newest = p->version.number + (p->acked_since_announce ? 1 : 0);
        load.lag_versions = std::max<int64_t>(0, newest - hosted->second);
      }
    }
    loads.push_back(std::move(load));
  }
  // A budget of capacity_groups batches never binds (fresh groups per batch are >= 1).
  const int64_t max_staleness =
      capacity_only ? config_.capacity_groups : config_.staleness.max_staleness;
  return DecideAdmission(loads, train_leases, config_.capacity_groups, max_staleness);
}

double DataflowCore::TrajectoryReward(const Sample& s) const {
  if (s.policies.empty()) return s.reward;
  for (size_t i = 0; i < s.policies.size(); ++i) {
    if (s.policies[i] == config_.policies[0]) return s.policy_rewards[i];
  }
  return s.policy_rewards[0];
}

LeasedTask DataflowCore::IssueLocked(Task& task, const std::string& worker_id, int64_t now_ns) {
  dirty_ = true;
  ++task.attempt;
  auto lease = std::make_unique<LeaseEntry>();
  lease->seq = static_cast<uint64_t>(++counters_->next_lease);
  lease->id = "lease-" + std::to_string(lease->seq);
  lease->task_id = task.id;
  lease->worker_id = worker_id;
  lease->attempt = task.attempt;
  lease->deadline_ns = now_ns + Ns(config_.lease_duration);
  task.state = Task::State::kLeased;
  task.lease_id = lease->id;
  ++counters_->leases_granted;

  const PromptRow& row = RowOf(task);
  LeasedTask out;
  out.task_id = task.id;
  out.lease_id = lease->id;
  out.attempt = task.attempt;
  out.eval = task.eval;
  out.prompt_id = row.id;
  out.prompt = row.prompt;
  out.answer = row.answer;
  out.dataset = row.dataset;
  out.row = row.row;
  out.samples = task.eval ? config_.eval.k : config_.group_size;
  out.sampling = config_.sampling;
  if (task.eval) out.sampling.merge_patch(config_.eval.sampling);
  out.workflow = config_.workflow;
  out.deadline = FromNs(lease->deadline_ns);
  leases_.emplace(lease->id, std::move(lease));
  return out;
}

void DataflowCore::FailAttemptLocked(Task& task, const std::string& error) {
  dirty_ = true;
  ++task.failures;
  task.last_error = error;
  task.lease_id.clear();
  if (task.failures >= config_.max_attempts) {
    task.state = Task::State::kFailed;
    ++counters_->tasks_failed;
    if (task.eval) FinishEvalTaskLocked(task.eval_round, std::nullopt);
    return;
  }
  task.state = Task::State::kPending;
  (task.eval ? eval_pending_ : pending_).push_front(task.id);
}

void DataflowCore::FinishEvalTaskLocked(int64_t round_id, const std::optional<EvalItem>& item) {
  auto it = eval_rounds_.find(round_id);
  if (it == eval_rounds_.end()) return;  // A late result of a round already scored.
  EvalRound& round = *it->second;
  if (item) {
    round.items.push_back(*item);
  } else {
    ++round.failed;
  }
  if (--round.outstanding > 0) return;
  json report = {{"round", round.id},
                 {"policy", round.policy},
                 {"version", round.version},
                 {"k", config_.eval.k},
                 {"failed_tasks", round.failed}};
  Result<EvalReport> r = AggregateEval(round.items, config_.eval.k);
  if (!r.ok()) {
    report["error"] = r.status().ToString();
  } else {
    report["overall_avg_at_k"] = r->overall_avg_at_k;
    report["overall_pass_at_k"] = r->overall_pass_at_k;
    report["overall_mean_reward"] = r->overall_mean_reward;
    json datasets = json::array();
    for (const DatasetEvalMetrics& d : r->datasets) {
      datasets.push_back({{"dataset", d.dataset},
                          {"prompts", d.prompts},
                          {"incomplete_prompts", d.incomplete_prompts},
                          {"completions", d.completions},
                          {"correct", d.correct},
                          {"avg_at_k", d.avg_at_k},
                          {"pass_at_k", d.pass_at_k},
                          {"mean_reward", d.mean_reward}});
    }
    report["datasets"] = std::move(datasets);
    AddEvalEpisodeFigures(r->episodes, &report);
  }
  last_eval_ = std::move(report);
  ++counters_->evals_completed;
  eval_rounds_.erase(it);
}

// ---- Leases. ----

LeaseReply DataflowCore::LeaseLocked(const LeaseRequest& request, int64_t now_ns,
                                     std::optional<int64_t> recorded_room, int64_t* room_used,
                                     bool capacity_only) {
  ExpireLocked(now_ns);
  LeaseReply reply;
  for (const auto& p : policies_) {
    if (p->announced && request.hosted_policies.count(p->name) > 0) {
      reply.versions.push_back({p->name, p->version});
    }
  }
  int64_t want = request.capacity;
  while (want > 0 && !eval_pending_.empty()) {
    Task& task = *tasks_.at(eval_pending_.front());
    eval_pending_.pop_front();
    reply.tasks.push_back(IssueLocked(task, request.worker_id, now_ns));
    --want;
  }
  int64_t room = recorded_room ? *recorded_room : AdmissionLocked(&request, capacity_only).room;
  if (room_used != nullptr) *room_used = room;
  int skips = 0;
  while (want > 0 && room > 0) {
    Task* task = nullptr;
    if (!pending_.empty()) {
      task = tasks_.at(pending_.front()).get();
      pending_.pop_front();
    } else {
      const std::optional<size_t> index = cursor_.Next();
      if (!index) break;
      dirty_ = true;
      const PromptRow& row = dataset_->train(*index);
      const CuratorDecision decision = curator_->ShouldLease(row.id, UnitRandom(rng_));
      if (!decision.lease) {
        if (skips < kMaxCuratorSkips) {
          ++skips;
          ++counters_->prompts_skipped;
          continue;
        }
        ++counters_->curator_forced;
      }
      skips = 0;
      auto t = std::make_unique<Task>();
      t->id = "task-" + std::to_string(++counters_->next_task);
      t->row = *index;
      task = t.get();
      tasks_.emplace(t->id, std::move(t));
    }
    reply.tasks.push_back(IssueLocked(*task, request.worker_id, now_ns));
    --want;
    --room;
  }
  reply.backpressure = AdmissionLocked().room <= 0;
  return reply;
}

LeaseReply DataflowCore::Lease(const LeaseRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  int64_t room = 0;
  LeaseReply reply = LeaseLocked(request, now, std::nullopt, &room);
  if (dirty_) {
    Emit(RecordType::kLease, {{"now", now},
                              {"worker", request.worker_id},
                              {"pool", request.pool},
                              {"region", request.region},
                              {"capacity", request.capacity},
                              {"room", room}});
    changed_.notify_all();
  }
  return reply;
}

Status DataflowCore::RenewLocked(std::string_view lease_id, int64_t now_ns) {
  auto it = leases_.find(std::string(lease_id));
  if (it == leases_.end()) return Status::NotFound("no lease " + std::string(lease_id));
  if (it->second->deadline_ns <= now_ns) {
    return Status::Gone("lease " + std::string(lease_id) + " has expired");
  }
  it->second->deadline_ns = now_ns + Ns(config_.lease_duration);
  dirty_ = true;
  return Status::Ok();
}

Status DataflowCore::Renew(std::string_view lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Status s = RenewLocked(lease_id, now);
  if (dirty_) Emit(RecordType::kRenew, {{"now", now}, {"lease", lease_id}});
  return s;
}

Status DataflowCore::ReleaseLocked(std::string_view lease_id, std::string_view error) {
  auto it = leases_.find(std::string(lease_id));
  if (it == leases_.end()) return Status::NotFound("no lease " + std::string(lease_id));
  const std::string worker = it->second->worker_id;
  Task& task = *tasks_.at(it->second->task_id);
  leases_.erase(it);
  ++counters_->releases;
  dirty_ = true;
  if (error.empty()) {
    task.state = Task::State::kPending;
    task.lease_id.clear();
    (task.eval ? eval_pending_ : pending_).push_front(task.id);
  } else {
    FailAttemptLocked(task, "released by worker " + worker + ": " + std::string(error));
  }
  return Status::Ok();
}

Status DataflowCore::Release(std::string_view lease_id, std::string_view error) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Status s = ReleaseLocked(lease_id, error);
  if (dirty_) {
    Emit(RecordType::kRelease, {{"now", now}, {"lease", lease_id}, {"error", error}});
    changed_.notify_all();
  }
  return s;
}

int64_t DataflowCore::ExpireLocked(int64_t now_ns) {
  std::vector<const LeaseEntry*> expired;
  for (const auto& [id, lease] : leases_) {
    if (lease->deadline_ns <= now_ns) expired.push_back(lease.get());
  }
  // Re-queued at the front: process the newest first so the oldest ends up first.
  std::sort(expired.begin(), expired.end(),
            [](const LeaseEntry* a, const LeaseEntry* b) { return a->seq > b->seq; });
  for (const LeaseEntry* lease : expired) {
    const std::string id = lease->id;
    const std::string message = "lease " + id + " of worker " + lease->worker_id + " expired";
    Task& task = *tasks_.at(lease->task_id);
    leases_.erase(id);
    ++counters_->lease_expiries;
    FailAttemptLocked(task, message);
  }
  return static_cast<int64_t>(expired.size());
}

int64_t DataflowCore::ExpireLeases() {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  const int64_t n = ExpireLocked(now);
  if (dirty_) {
    Emit(RecordType::kExpire, {{"now", now}});
    changed_.notify_all();
  }
  return n;
}

// ---- Submit. ----

Result<SubmitResult> DataflowCore::SubmitLocked(const TrajectoryGroup& group) {
  if (group.task_id.empty()) return Status::InvalidArgument("must not be empty", "task_id");
  if (group.samples.empty()) {
    return Status::InvalidArgument("a group has at least one sample", "samples");
  }
  if (completed_.Contains(group.task_id)) {
    ++counters_->duplicates;
    dirty_ = true;
    SubmitResult r;
    r.duplicate = true;
    r.eval = group.eval;
    return r;
  }
  auto it = tasks_.find(group.task_id);
  if (it == tasks_.end()) {
    return Status::NotFound("no task " + group.task_id +
                            " (never issued, or completed long enough ago to be forgotten)");
  }
  Task& task = *it->second;
  if (group.attempt < 1 || group.attempt > task.attempt) {
    return Status::InvalidArgument(
        "attempt " + std::to_string(group.attempt) + " was never issued for task " + task.id,
        "attempt");
  }
  if (group.eval != task.eval) {
    return Status::InvalidArgument("differs from the task's", "eval");
  }
  const PromptRow& row = RowOf(task);
  std::vector<Sample> parts;
  std::vector<double> rewards;
  std::vector<EvalEpisode> episodes;  // Eval tasks only.
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const std::string field = "samples[" + std::to_string(i) + "]";
    Sample s = group.samples[i];
    s.task_id = task.id;
    s.prompt_id = row.id;
    s.group_id = 0;
    s.loss_weight = 1.0;
    s.group_mean.reset();
    s.group_std.reset();
    s.advantage.reset();
    if (s.policy.empty() && s.policies.empty() && config_.policies.size() == 1) {
      s.policy = config_.policies[0];
    }
    if (Status st = ValidateSample(s); !st.ok()) return Prefixed(st, field);
    rewards.push_back(TrajectoryReward(s));
    if (task.eval) {
      episodes.push_back(EvalEpisodeOf(s, config_.policies[0], IsFullReward(rewards.back())));
      continue;
    }
    Result<std::vector<Sample>> split = SplitByPolicy(s);
    if (!split.ok()) return Prefixed(split.status(), field);
    for (Sample& part : *split) {
      if (FindPolicy(part.policy) == nullptr) {
        return Status::InvalidArgument("policy " + part.policy + " is not in this dataflow",
                                       field + ".policy");
      }
      parts.push_back(std::move(part));
    }
  }

  // Valid: commit.
  dirty_ = true;
  SubmitResult result;
  result.eval = task.eval;
  result.late = task.state != Task::State::kLeased || group.attempt != task.attempt;
  if (task.state == Task::State::kLeased) {
    leases_.erase(task.lease_id);
  } else if (task.state == Task::State::kPending) {
    auto& queue = task.eval ? eval_pending_ : pending_;
    queue.erase(std::remove(queue.begin(), queue.end(), task.id), queue.end());
  }
  ++counters_->submits_accepted;
  if (result.late) ++counters_->submits_late;
  completed_.Insert(task.id);
  const bool eval = task.eval;
  const int64_t round = task.eval_round;
  const std::string task_id = task.id;
  tasks_.erase(it);

  if (eval) {
    EvalItem item;
    item.dataset = row.dataset;
    item.prompt_id = row.id;
    item.rewards = rewards;
    // Correct means the full reward, so avg@k and pass@k count exact answers, not partial credit
    // (digit-match's 0.5 for one digit right). For code-exec a completion is then correct only
    // when it passes every test case, the usual pass@k definition; reward > 0 (the default with
    // no flags) counted a program passing one test of ten.
    item.correct.reserve(rewards.size());
    for (double r : rewards) item.correct.push_back(IsFullReward(r) ? 1 : 0);
    item.episodes = std::move(episodes);
    FinishEvalTaskLocked(round, item);
    return result;
  }

  const uint64_t group_id = static_cast<uint64_t>(++counters_->next_group);
  for (Sample& part : parts) part.group_id = group_id;
  for (std::vector<Sample>& g : PartitionGroups(std::move(parts))) {
    PolicyState& p = *FindPolicy(g.front().policy);
    const std::vector<FilterCounters> before = chain_.counters();
    Result<FilterOutcome> outcome = chain_.Apply(g);
    if (!outcome.ok()) return Status::Internal("filters: " + outcome.status().ToString());
    const std::vector<FilterCounters>& after = chain_.counters();
    for (size_t i = 0; i < after.size() && i < p.filters.size(); ++i) {
      p.filters[i].groups_dropped += after[i].groups_dropped - before[i].groups_dropped;
      p.filters[i].samples_dropped += after[i].samples_dropped - before[i].samples_dropped;
    }
    const auto n = static_cast<int64_t>(g.size());
    if (!outcome->keep) {
      ++p.counters.filtered_groups;
      p.counters.filtered_samples += n;
      ++result.groups_filtered;
      result.samples_filtered += n;
      continue;
    }
    const auto dropped = static_cast<int64_t>(outcome->samples_dropped);
    p.counters.filtered_samples += dropped;
    result.samples_filtered += dropped;
    if (Status st = StampGroupStats(g, config_.group_stats); !st.ok()) {
      return Status::Internal("group stats: " + st.ToString());
    }
    BufferedGroup bg;
    bg.group_id = group_id;
    bg.arrival = static_cast<uint64_t>(++counters_->next_arrival);
    bg.task_id = task_id;
    bg.prompt_id = row.id;
    bg.samples = std::move(g);
    ++p.counters.accepted_groups;
    p.counters.accepted_samples += static_cast<int64_t>(bg.samples.size());
    ++result.groups_kept;
    result.samples_kept += static_cast<int64_t>(bg.samples.size());
    bg.Queued();  // Scans the tokens now, while they are hot, rather than in a later take.
    p.buffer.push_back(std::move(bg));
  }
  if (Status st = curator_->Update(row.id, rewards); !st.ok()) {
    return Status::Internal("curator: " + st.ToString());
  }
  return result;
}

Result<SubmitResult> DataflowCore::Submit(const TrajectoryGroup& group, std::string_view encoded) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  Result<SubmitResult> r = SubmitLocked(group);
  if (!dirty_) return r;
  if (r.ok() && r->duplicate) {
    Emit(RecordType::kDuplicateSubmit, {{"task", group.task_id}, {"attempt", group.attempt}});
  } else if (!replaying_ && sink_) {
    Record record{static_cast<uint32_t>(RecordType::kSubmit), std::string(encoded)};
    if (encoded.empty()) {
      Status st = EncodeTrajectoryGroup(group, &record.payload);
      SLUICE_CHECK(st.ok());  // A group that passed validation always encodes.
    }
    sink_(record);
  }
  changed_.notify_all();
  return r;
}

// ---- Batches. ----

Batch DataflowCore::BuildBatch(const OutstandingBatch& b) const {
  Batch batch;
  batch.batch_id = b.id;
  batch.policy = b.policy;
  batch.policy_version = b.version;
  batch.stats = ServedStats(b);
  size_t n = 0;
  for (const BufferedGroup& g : b.groups) n += g.samples.size();
  batch.samples.reserve(n);
  batch.group_index.reserve(n);
  batch.replayed.reserve(n);
  for (size_t g = 0; g < b.groups.size(); ++g) {
    for (const Sample& s : b.groups[g].samples) {
      batch.samples.push_back(s);
      batch.group_index.push_back(static_cast<uint32_t>(g));
      batch.replayed.push_back(b.replayed[g]);
    }
  }
  return batch;
}

json DataflowCore::ServedStats(const OutstandingBatch& b) {
  json stats = b.stats;
  stats["serves"] = b.serves;
  return stats;
}

Result<BatchFrameWriter> DataflowCore::FrameWriterLocked(
    const std::shared_ptr<OutstandingBatch>& b) const {
  // The same view of the samples BuildBatch copies, so the bytes are those of EncodeBatch of it.
  const json stats = ServedStats(*b);
  BatchView view;
  view.batch_id = b->id;
  view.policy = b->policy;
  view.policy_version = b->version;
  view.stats = &stats;
  for (size_t g = 0; g < b->groups.size(); ++g) {
    for (const Sample& s : b->groups[g].samples) {
      view.samples.push_back(&s);
      view.group_index.push_back(static_cast<uint32_t>(g));
      view.replayed.push_back(b->replayed[g]);
    }
  }
  // The writer reads the packed arrays after the lock is released: holding the batch keeps its
  // samples alive, and AckLocked leaves the samples of a held batch untouched.
  return BatchFrameWriter::Create(view, b);
}

Result<DataflowCore::OutstandingBatch*> DataflowCore::TakeBatchLocked(std::string_view policy,
                                                                      int64_t groups,
                                                                      int64_t now_ns) {
  PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return Status::NotFound("no policy " + std::string(policy));

  // An unacknowledged batch whose ack timeout passed is served again, oldest serve first.
  OutstandingBatch* due = nullptr;
  for (auto& [id, b] : outstanding_) {
    if (b->policy != p->name || now_ns - b->served_at_ns < Ns(config_.ack_timeout)) continue;
    if (due == nullptr || b->served_at_ns < due->served_at_ns) due = b.get();
  }
  if (due != nullptr) {
    dirty_ = true;
    due->served_at_ns = now_ns;
    ++due->serves;
    ++p->counters.reserved_batches;
    return due;
  }

  std::map<std::string, int64_t, std::less<>> latest;
  for (const auto& q : policies_) latest[q->name] = q->version.number;
  Result<BarrierDecision> barrier = MayServeNextBatch(p->name, latest, config_.version_barrier);
  if (!barrier.ok()) return barrier.status();
  if (!barrier->may_serve) return nullptr;

  const size_t n = static_cast<size_t>(groups > 0 ? groups : config_.groups_per_batch);
  const size_t replay_n = p->replay.ReplayCount(n);
  const size_t fresh_n = n - replay_n;
  std::vector<QueuedGroup> queued;
  queued.reserve(p->buffer.size());
  for (const BufferedGroup& g : p->buffer) queued.push_back(g.Queued());
  const int64_t version = p->version.number;
  const PickResult pick = PickGroups(queued, fresh_n, version, config_.staleness);

  std::vector<bool> remove(p->buffer.size(), false);
  for (size_t i : pick.stale) {
    remove[i] = true;
    ++p->counters.stale_dropped_groups;
    p->counters.stale_dropped_samples += static_cast<int64_t>(p->buffer[i].samples.size());
    p->counters.stale_dropped_tokens += queued[i].generated_tokens;
    dirty_ = true;
  }
  const bool enough = pick.picked.size() >= fresh_n;
  auto batch = std::make_unique<OutstandingBatch>();
  if (enough) {
    for (size_t i : pick.picked) {
      remove[i] = true;
      BufferedGroup g = std::move(p->buffer[i]);
      // No sample is older than its group's oldest token: only a group that is stale as a
      // whole (kept by down-weighting) can hold stale samples, so only its tokens are rescanned.
      const int64_t oldest = queued[i].min_version;
      if (oldest != kNoVersion && version - oldest > config_.staleness.max_staleness) {
        for (Sample& s : g.samples) {
          const StalenessVerdict v = JudgeStaleness(s, version, config_.staleness);
          if (v.stale && v.keep) {
            s.loss_weight = v.weight;
            ++p->counters.down_weighted_samples;
          }
        }
      }
      batch->groups.push_back(std::move(g));
      batch->replayed.push_back(0);
    }
  }
  if (dirty_ || enough) {
    std::vector<BufferedGroup> kept;
    kept.reserve(p->buffer.size());
    for (size_t i = 0; i < p->buffer.size(); ++i) {
      if (!remove[i]) kept.push_back(std::move(p->buffer[i]));
    }
    p->buffer = std::move(kept);
  }
  if (!enough) return nullptr;

  dirty_ = true;
  batch->fresh_groups = static_cast<int64_t>(batch->groups.size());
  for (uint64_t id : p->replay.Select(replay_n, rng_)) {
    auto it = p->replay_groups.find(id);
    if (it == p->replay_groups.end()) continue;  // Cannot happen: pruned with the memory.
    batch->groups.push_back(it->second);
    batch->replayed.push_back(1);
    ++p->counters.replayed_groups;
  }
  batch->id = "batch-" + std::to_string(++counters_->next_batch);
  batch->policy = p->name;
  batch->version = version;
  batch->served_at_ns = now_ns;
  ++p->counters.served_batches;
  p->counters.served_groups += batch->fresh_groups;
  batch->stats = {
      {"fresh_groups", batch->fresh_groups},
      {"replayed_groups", static_cast<int64_t>(batch->groups.size()) - batch->fresh_groups},
      {"buffered_groups", static_cast<int64_t>(p->buffer.size())},
      {"replay_size", static_cast<int64_t>(p->replay.size())},
      {"accepted_groups", p->counters.accepted_groups},
      {"filtered_groups", p->counters.filtered_groups},
      {"stale_dropped_groups", p->counters.stale_dropped_groups},
      {"stale_dropped_tokens", p->counters.stale_dropped_tokens}};
  OutstandingBatch* taken = batch.get();
  outstanding_.emplace(taken->id, std::move(batch));
  return taken;
}

Result<DataflowCore::OutstandingBatch*> DataflowCore::TakeAndLogLocked(std::string_view policy,
                                                                       int64_t groups) {
  dirty_ = false;
  const int64_t now = NowNs();
  Result<OutstandingBatch*> r = TakeBatchLocked(policy, groups, now);
  if (dirty_) {
    Emit(RecordType::kTakeBatch, {{"now", now}, {"policy", policy}, {"groups", groups}});
    changed_.notify_all();
  }
  return r;
}

Result<std::optional<Batch>> DataflowCore::TakeBatch(std::string_view policy, int64_t groups) {
  std::lock_guard<std::mutex> lock(mu_);
  SLUICE_ASSIGN_OR_RETURN(OutstandingBatch * taken, TakeAndLogLocked(policy, groups));
  if (taken == nullptr) return std::optional<Batch>();
  return std::optional<Batch>(BuildBatch(*taken));
}

Result<std::optional<BatchFrame>> DataflowCore::TakeBatchFrame(std::string_view policy,
                                                               int64_t groups) {
  std::lock_guard<std::mutex> lock(mu_);
  SLUICE_ASSIGN_OR_RETURN(OutstandingBatch * taken, TakeAndLogLocked(policy, groups));
  if (taken == nullptr) return std::optional<BatchFrame>();
  Result<BatchFrameWriter> writer = FrameWriterLocked(outstanding_.at(taken->id));
  if (!writer.ok()) {
    return Status::Internal("encoding " + taken->id + ": " + writer.status().ToString());
  }
  return std::optional<BatchFrame>(BatchFrame{taken->id, std::move(*writer)});
}

Status DataflowCore::AckLocked(std::string_view batch_id) {
  auto it = outstanding_.find(std::string(batch_id));
  if (it == outstanding_.end()) {
    if (acked_.Contains(batch_id)) return Status::Ok();
    return Status::NotFound("no batch " + std::string(batch_id));
  }
  dirty_ = true;
  OutstandingBatch& b = *it->second;
  PolicyState& p = *FindPolicy(b.policy);
  if (config_.replay.replay_ratio > 0) {
    // A frame writer may still be reading this batch's samples outside the lock (a slow
    // client, or an ack sent as soon as the X-Sluice-Batch-Id header arrived): copy them then.
    const bool held = it->second.use_count() > 1;
    for (size_t i = 0; i < b.groups.size(); ++i) {
      if (b.replayed[i] != 0) continue;
      BufferedGroup g = held ? b.groups[i] : std::move(b.groups[i]);
      for (Sample& s : g.samples) s.loss_weight = 1.0;
      p.replay.Add(g.group_id, GroupPriority(g.samples));
      p.replay_groups[g.group_id] = std::move(g);
    }
    std::set<uint64_t> live;
    for (const ReplayEntry& e : p.replay.entries()) live.insert(e.group_id);
    std::erase_if(p.replay_groups, [&](const auto& kv) { return live.count(kv.first) == 0; });
  }
  ++p.counters.acked_batches;
  p.counters.acked_groups += b.fresh_groups;
  p.acked_since_announce = true;
  acked_.Insert(b.id);
  outstanding_.erase(it);
  return Status::Ok();
}

Status DataflowCore::Ack(std::string_view batch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Status s = AckLocked(batch_id);
  if (dirty_) {
    Emit(RecordType::kAck, {{"now", now}, {"batch", batch_id}});
    changed_.notify_all();
  }
  return s;
}

// ---- Versions. ----

Status DataflowCore::AnnounceLocked(std::string_view policy, const VersionInfo& version) {
  PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return Status::NotFound("no policy " + std::string(policy));
  if (version.number <= p->version.number) {
    if (p->announced && version == p->version) return Status::Ok();
    return Status::Conflict("version " + std::to_string(version.number) +
                            " is not newer than the current version " +
                            std::to_string(p->version.number) + " of " + p->name);
  }
  dirty_ = true;
  auto lowest = [&] {
    int64_t v = p->version.number;
    for (const auto& q : policies_) v = std::min(v, q->version.number);
    return v;
  };
  EvalTriggerFacts facts;
  facts.every_versions = config_.eval.every_versions;
  facts.at_start = config_.eval.at_start;
  facts.barrier = config_.version_barrier;
  facts.policies = static_cast<int64_t>(policies_.size());
  facts.primary = p == policies_.front().get();
  facts.evaluate = version.evaluate;
  facts.previous = p->version.number;
  facts.announced = version.number;
  facts.lowest_before = lowest();
  p->version = version;
  p->announced = true;
  p->acked_since_announce = false;
  facts.lowest_after = lowest();
  if (facts.primary) curator_->OnVersion(version.number);
  if (const std::optional<int64_t> round = EvalRoundToQueue(facts)) {
    QueueEvalRoundLocked(*policies_.front(), *round);
  }
  return Status::Ok();
}

Status DataflowCore::AnnounceVersion(std::string_view policy, const VersionInfo& version) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Status s = AnnounceLocked(policy, version);
  if (dirty_) {
    json payload = VersionToJson(version);
    payload["now"] = now;
    payload["policy"] = policy;
    Emit(RecordType::kAnnounce, std::move(payload));
    changed_.notify_all();
  }
  return s;
}

int64_t DataflowCore::CurrentVersion(std::string_view policy) const {
  std::lock_guard<std::mutex> lock(mu_);
  const PolicyState* p = FindPolicy(policy);
  return p == nullptr ? -1 : p->version.number;
}

std::vector<PolicyVersion> DataflowCore::AnnouncedVersions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PolicyVersion> out;
  for (const auto& p : policies_) {
    if (p->announced) out.push_back({p->name, p->version});
  }
  return out;
}

// ---- Status and waiting. ----

bool DataflowCore::Backpressure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return AdmissionLocked().room <= 0;
}

json DataflowCore::StatusJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  json policies = json::object();
  for (const auto& p : policies_) {
    json j = CountersToJson(p->counters, kPolicyCounterFields);
    j["version"] = p->version.number;
    int64_t samples = 0;
    std::vector<QueuedGroup> queued;
    queued.reserve(p->buffer.size());
    for (const BufferedGroup& g : p->buffer) {
      samples += static_cast<int64_t>(g.samples.size());
      queued.push_back(g.Queued());
    }
    j["buffered_groups"] = static_cast<int64_t>(p->buffer.size());
    j["buffered_samples"] = samples;
    j["buffer_lag"] = BufferLag(queued, p->version.number);
    int64_t unacked = 0;
    int64_t unacked_groups = 0;
    for (const auto& [id, b] : outstanding_) {
      if (b->policy != p->name) continue;
      ++unacked;
      unacked_groups += b->fresh_groups;
    }
    j["unacked_batches"] = unacked;
    j["unacked_groups"] = unacked_groups;
    j["replay_size"] = static_cast<int64_t>(p->replay.size());
    json filters = json::array();
    for (const FilterCounters& f : p->filters) {
      filters.push_back({{"type", f.type},
                         {"groups_dropped", f.groups_dropped},
                         {"samples_dropped", f.samples_dropped}});
    }
    j["filters"] = std::move(filters);
    policies[p->name] = std::move(j);
  }
  // The end of the data, each policy at its own batch size.
  const DrainInput drain_input = DrainInputLocked({}, 0);
  const DrainState drain = DecideDrain(drain_input);
  for (size_t i = 0; i < drain.policies.size(); ++i) {
    json& j = policies[drain.policies[i].policy];
    j["drained"] = drain.policies[i].drained;
    j["drain_reason"] = drain.policies[i].reason;
    j["usable_groups"] = drain_input.policies[i].usable_groups;
    j["batch_groups"] = drain_input.policies[i].batch_groups;
  }
  json failed = json::array();
  int64_t eval_in_flight = 0;
  for (const auto& [id, t] : tasks_) {
    if (t->state == Task::State::kFailed) {
      const PromptRow& row = RowOf(*t);
      failed.push_back({{"task_id", t->id},
                        {"prompt_id", row.id},
                        {"eval", t->eval},
                        {"attempts", t->attempt},
                        {"failures", t->failures},
                        {"error", t->last_error}});
    }
  }
  for (const auto& [id, lease] : leases_) {
    if (tasks_.at(lease->task_id)->eval) ++eval_in_flight;
  }
  const CoreCounters& c = *counters_;
  const AdmissionDecision admission = AdmissionLocked();
  const int64_t room = admission.room;
  RolloutDemandInput demand;
  demand.leases_in_flight = static_cast<int64_t>(leases_.size());
  demand.pending_eval_tasks = static_cast<int64_t>(eval_pending_.size());
  demand.pending_train_tasks = static_cast<int64_t>(pending_.size());
  demand.unleased_prompts = static_cast<int64_t>(cursor_.total() - cursor_.consumed());
  demand.admission_room = room;
  return {
      {"policies", std::move(policies)},
      {"leases_in_flight", static_cast<int64_t>(leases_.size())},
      {"eval_leases_in_flight", eval_in_flight},
      {"pending_tasks", static_cast<int64_t>(pending_.size())},
      {"pending_eval_tasks", static_cast<int64_t>(eval_pending_.size())},
      {"prompts",
       {{"consumed", cursor_.consumed()},
        {"total", cursor_.total()},
        {"skipped", c.prompts_skipped},
        {"forced", c.curator_forced},
        {"dropped_duplicates", static_cast<int64_t>(dataset_->dropped_duplicates())}}},
      {"epoch", cursor_.epoch()},
      {"epochs", cursor_.epochs()},
      {"dataset_done", cursor_.done()},
      {"exhausted", drain.exhausted},
      {"capacity_groups", config_.capacity_groups},
      {"admission_room", room},
      {"admission_limit", admission.limit},
      {"admission_policy", admission.policy},
      {"backpressure", room <= 0},
      {"rollout_demand", RolloutDemand(demand)},
      {"failed_tasks", std::move(failed)},
      {"submits",
       {{"accepted", c.submits_accepted}, {"late", c.submits_late}, {"duplicates", c.duplicates}}},
      {"leases",
       {{"granted", c.leases_granted},
        {"expired", c.lease_expiries},
        {"released", c.releases},
        {"tasks_failed", c.tasks_failed}}},
      {"eval",
       {{"rounds_in_progress", static_cast<int64_t>(eval_rounds_.size())},
        {"completed", c.evals_completed},
        {"last", last_eval_}}}};
}

bool DataflowCore::HasWorkLocked(int64_t now_ns, const LeaseRequest* request) const {
  if (!eval_pending_.empty()) return true;
  for (const auto& [id, lease] : leases_) {
    if (lease->deadline_ns <= now_ns) return true;  // Lease() will re-queue it.
  }
  return AdmissionLocked(request).room > 0 && (!pending_.empty() || !cursor_.done());
}

bool DataflowCore::NewerVersionLocked(const LeaseRequest& request) const {
  for (const auto& p : policies_) {
    auto hosted = request.hosted_policies.find(p->name);
    if (hosted != request.hosted_policies.end() && p->announced &&
        p->version.number > hosted->second) {
      return true;
    }
  }
  return false;
}

bool DataflowCore::BatchReadyLocked(std::string_view policy, int64_t groups, int64_t now_ns) const {
  const PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return true;  // TakeBatch answers NotFound at once.
  for (const auto& [id, b] : outstanding_) {
    if (b->policy == p->name && now_ns - b->served_at_ns >= Ns(config_.ack_timeout)) return true;
  }
  std::map<std::string, int64_t, std::less<>> latest;
  for (const auto& q : policies_) latest[q->name] = q->version.number;
  Result<BarrierDecision> barrier = MayServeNextBatch(p->name, latest, config_.version_barrier);
  if (!barrier.ok() || !barrier->may_serve) return false;
  const size_t n = static_cast<size_t>(groups > 0 ? groups : config_.groups_per_batch);
  return p->buffer.size() >= n - p->replay.ReplayCount(n);
}

DrainInput DataflowCore::DrainInputLocked(std::string_view policy, int64_t groups) const {
  DrainInput in;
  in.dataset_done = cursor_.done();
  in.pending_train_tasks = static_cast<int64_t>(pending_.size());
  for (const auto& [id, lease] : leases_) {
    auto it = tasks_.find(lease->task_id);
    if (it != tasks_.end() && !it->second->eval) ++in.leased_train_tasks;
  }
  in.epochs = config_.epochs;
  in.version_barrier = config_.version_barrier;
  for (const auto& p : policies_) {
    DrainPolicyInput d;
    d.policy = p->name;
    d.version = p->version.number;
    d.announce_due = p->acked_since_announce;
    for (const auto& [id, b] : outstanding_) {
      if (b->policy == p->name) ++d.unacked_batches;
    }
    d.buffered_groups = static_cast<int64_t>(p->buffer.size());
    d.batch_groups = config_.groups_per_batch;
    if (auto sized = config_.groups_per_batch_by_policy.find(p->name);
        sized != config_.groups_per_batch_by_policy.end()) {
      d.batch_groups = sized->second;
    }
    if (p->name == policy && groups > 0) d.batch_groups = groups;
    const auto n = static_cast<size_t>(d.batch_groups);
    d.fresh_needed = static_cast<int64_t>(n - p->replay.ReplayCount(n));
    // What a take would serve now: every buffered group but the stale ones it would drop.
    std::vector<QueuedGroup> queued;
    queued.reserve(p->buffer.size());
    for (const BufferedGroup& g : p->buffer) queued.push_back(g.Queued());
    d.usable_groups = static_cast<int64_t>(
        PickGroups(queued, queued.size(), d.version, config_.staleness).picked.size());
    in.policies.push_back(std::move(d));
  }
  return in;
}

Result<PolicyDrain> DataflowCore::DrainLocked(std::string_view policy, int64_t groups) const {
  if (FindPolicy(policy) == nullptr) return Status::NotFound("no policy " + std::string(policy));
  // Cheap first: until the data is exhausted nothing is drained, and buffers need no scan.
  if (!cursor_.done() || !pending_.empty()) return PolicyDrain{std::string(policy), false, ""};
  const DrainState state = DecideDrain(DrainInputLocked(policy, groups));
  for (const PolicyDrain& d : state.policies) {
    if (d.policy == policy) return d;
  }
  return Status::Internal("no drain decision for policy " + std::string(policy));
}

Result<PolicyDrain> DataflowCore::Drain(std::string_view policy, int64_t groups) const {
  std::lock_guard<std::mutex> lock(mu_);
  return DrainLocked(policy, groups);
}

bool DataflowCore::Wait(const std::atomic<bool>& cancel,
                        std::chrono::steady_clock::time_point deadline,
                        const std::function<bool()>& ready) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (ready()) return true;
    if (cancel.load()) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    changed_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(50)));
  }
}

bool DataflowCore::WaitForWork(const std::atomic<bool>& cancel,
                               std::chrono::steady_clock::time_point deadline,
                               const LeaseRequest* request) {
  return Wait(cancel, deadline, [&] {
    return HasWorkLocked(NowNs(), request) || (request != nullptr && NewerVersionLocked(*request));
  });
}

bool DataflowCore::WaitForBatch(std::string_view policy, int64_t groups,
                                const std::atomic<bool>& cancel,
                                std::chrono::steady_clock::time_point deadline) {
  return Wait(cancel, deadline, [&] {
    if (BatchReadyLocked(policy, groups, NowNs())) return true;
    Result<PolicyDrain> drain = DrainLocked(policy, groups);
    return drain.ok() && drain->drained;
  });
}

// ---- Recovery. ----

Status DataflowCore::ApplyRecord(const Record& record) {
  std::lock_guard<std::mutex> lock(mu_);
  struct Replaying {
    bool& flag;
    explicit Replaying(bool& f) : flag(f) { flag = true; }
    ~Replaying() { flag = false; }
  } replaying(replaying_);
  dirty_ = false;
  const auto type = static_cast<RecordType>(record.type);
  const std::string what = "record type " + std::to_string(record.type);
  if (type == RecordType::kSubmit) {
    Result<TrajectoryGroup> group = DecodeTrajectoryGroup(record.payload);
    if (!group.ok()) return Status::Corruption(what + ": " + group.status().ToString());
    Result<SubmitResult> r = SubmitLocked(*group);
    if (!r.ok()) return Status::Corruption(what + " does not apply: " + r.status().ToString());
    changed_.notify_all();
    return Status::Ok();
  }
  Status applied;
  try {
    const json j = json::from_cbor(record.payload);
    switch (type) {
      case RecordType::kLease: {
        LeaseRequest request;
        request.worker_id = j.at("worker").get<std::string>();
        request.pool = j.at("pool").get<std::string>();
        request.region = j.at("region").get<std::string>();
        request.capacity = j.at("capacity").get<int64_t>();
        // Logs written before the room was recorded were granted under the capacity limit alone.
        std::optional<int64_t> room;
        if (j.contains("room")) room = j.at("room").get<int64_t>();
        LeaseLocked(request, j.at("now").get<int64_t>(), room, nullptr, !room.has_value());
        break;
      }
      case RecordType::kRenew:
        applied = RenewLocked(j.at("lease").get<std::string>(), j.at("now").get<int64_t>());
        break;
      case RecordType::kRelease:
        applied = ReleaseLocked(j.at("lease").get<std::string>(), j.at("error").get<std::string>());
        break;
      case RecordType::kExpire:
        ExpireLocked(j.at("now").get<int64_t>());
        break;
      case RecordType::kDuplicateSubmit:
        ++counters_->duplicates;
        break;
      case RecordType::kTakeBatch:
        applied = TakeBatchLocked(j.at("policy").get<std::string>(), j.at("groups").get<int64_t>(),
                                  j.at("now").get<int64_t>())
                      .status();
        break;
      case RecordType::kAck:
        applied = AckLocked(j.at("batch").get<std::string>());
        break;
      case RecordType::kAnnounce:
        applied = AnnounceLocked(j.at("policy").get<std::string>(), VersionFromJson(j));
        break;
      default:
        return Status::Corruption("unknown " + what);
    }
  } catch (const std::exception& e) {
    return Status::Corruption(what + ": " + e.what());
  }
  if (!applied.ok()) return Status::Corruption(what + " does not apply: " + applied.ToString());
  changed_.notify_all();
  return Status::Ok();
}

namespace {

json TaskFieldsToJson(const std::string& id, bool eval, uint64_t row, int64_t round,
                      uint32_t attempt, int failures, const std::string& error, int state,
                      const std::string& lease) {
  return {{"id", id},       {"eval", eval},       {"row", row},
          {"round", round}, {"attempt", attempt}, {"failures", failures},
          {"error", error}, {"state", state},     {"lease", lease}};
}

Result<json> GroupsToJson(const std::vector<BufferedGroup>& groups) {
  json out = json::array();
  for (const BufferedGroup& g : groups) {
    SLUICE_ASSIGN_OR_RETURN(json e, EncodeBufferedGroup(g));
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<BufferedGroup>> GroupsFromJson(const json& j) {
  std::vector<BufferedGroup> out;
  for (const json& e : j) {
    SLUICE_ASSIGN_OR_RETURN(BufferedGroup g, DecodeBufferedGroup(e));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

json DataflowCore::SnapshotJsonLocked() const {
  json j;
  j["format"] = 1;
  j["fingerprint"] = dataset_->fingerprint();
  j["policies_config"] = config_.policies;
  std::ostringstream rng;
  rng << rng_;
  j["rng"] = rng.str();
  const DatasetCursor::State cs = cursor_.state();
  j["cursor"] = {cs.epoch, cs.position};
  j["curator"] = curator_->Serialize();
  j["counters"] = CountersToJson(static_cast<const CoreCounters&>(*counters_), kCoreCounterFields);
  json tasks = json::array();
  for (const auto& [id, t] : tasks_) {
    tasks.push_back(TaskFieldsToJson(t->id, t->eval, t->row, t->eval_round, t->attempt, t->failures,
                                     t->last_error, static_cast<int>(t->state), t->lease_id));
  }
  j["tasks"] = std::move(tasks);
  j["pending"] = pending_;
  j["eval_pending"] = eval_pending_;
  j["completed"] = completed_.ToJson();
  json leases = json::array();
  for (const auto& [id, l] : leases_) {
    leases.push_back({{"id", l->id},
                      {"seq", l->seq},
                      {"task", l->task_id},
                      {"worker", l->worker_id},
                      {"attempt", l->attempt},
                      {"deadline", l->deadline_ns}});
  }
  j["leases"] = std::move(leases);
  json policies = json::array();
  for (const auto& p : policies_) {
    json pj = {
        {"name", p->name}, {"version", VersionToJson(p->version)}, {"announced", p->announced}};
    pj["buffer"] = GroupsToJson(p->buffer).value();
    pj["replay"] = p->replay.Serialize();
    std::vector<BufferedGroup> replay_groups;
    for (const auto& [id, g] : p->replay_groups) replay_groups.push_back(g);
    pj["replay_groups"] = GroupsToJson(replay_groups).value();
    pj["counters"] = CountersToJson(p->counters, kPolicyCounterFields);
    pj["acked_since_announce"] = p->acked_since_announce;
    json filters = json::array();
    for (const FilterCounters& f : p->filters) {
      filters.push_back({f.type, f.groups_dropped, f.samples_dropped});
    }
    pj["filters"] = std::move(filters);
    policies.push_back(std::move(pj));
  }
  j["policies"] = std::move(policies);
  json outstanding = json::array();
  for (const auto& [id, b] : outstanding_) {
    outstanding.push_back({{"id", b->id},
                           {"policy", b->policy},
                           {"version", b->version},
                           {"served_at", b->served_at_ns},
                           {"serves", b->serves},
                           {"fresh", b->fresh_groups},
                           {"replayed", b->replayed},
                           {"stats", b->stats},
                           {"groups", GroupsToJson(b->groups).value()}});
  }
  j["outstanding"] = std::move(outstanding);
  j["acked"] = acked_.ToJson();
  json rounds = json::array();
  for (const auto& [id, r] : eval_rounds_) {
    json items = json::array();
    for (const EvalItem& item : r->items) {
      items.push_back({{"dataset", item.dataset},
                       {"prompt", item.prompt_id},
                       {"rewards", item.rewards},
                       {"correct", item.correct},
                       {"episodes", EvalEpisodesToJson(item.episodes)}});
    }
    rounds.push_back({{"id", r->id},
                      {"policy", r->policy},
                      {"version", r->version},
                      {"outstanding", r->outstanding},
                      {"failed", r->failed},
                      {"items", std::move(items)}});
  }
  j["eval_rounds"] = std::move(rounds);
  j["last_eval"] = last_eval_;
  return j;
}

std::string DataflowCore::Snapshot(const std::function<void()>& under_lock) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (under_lock) under_lock();
  const std::vector<uint8_t> bytes = json::to_cbor(SnapshotJsonLocked());
  return std::string(bytes.begin(), bytes.end());
}

Status DataflowCore::RestoreSnapshot(std::string_view snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    const json j = json::from_cbor(snapshot);
    if (j.at("format").get<int>() != 1) return Status::Corruption("unknown snapshot format");
    if (j.at("fingerprint").get<uint64_t>() != dataset_->fingerprint()) {
      return Status::Conflict("the snapshot was taken with a different dataset");
    }
    if (j.at("policies_config").get<std::vector<std::string>>() != config_.policies) {
      return Status::Conflict("the snapshot was taken with different policies");
    }
    // Build everything aside, then swap in, so a bad snapshot changes nothing.
    std::mt19937_64 rng;
    std::istringstream rng_in(j.at("rng").get<std::string>());
    rng_in >> rng;
    if (rng_in.fail()) return Status::Corruption("bad generator state", "rng");
    DatasetCursor cursor(*dataset_, config_.shuffle, config_.shuffle_seed, config_.epochs);
    SLUICE_RETURN_IF_ERROR(cursor.Restore(
        {j.at("cursor").at(0).get<int64_t>(), j.at("cursor").at(1).get<uint64_t>()}));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<PromptCurator> curator,
                            MakeCurator(config_.curator, config_.curator_options));
    SLUICE_RETURN_IF_ERROR(curator->Deserialize(j.at("curator")));
    auto counters = std::make_unique<Counters>();
    CountersFromJson(j.at("counters"), static_cast<CoreCounters&>(*counters), kCoreCounterFields);

    std::map<std::string, std::unique_ptr<Task>> tasks;
    for (const json& tj : j.at("tasks")) {
      auto t = std::make_unique<Task>();
      t->id = tj.at("id").get<std::string>();
      t->eval = tj.at("eval").get<bool>();
      t->row = tj.at("row").get<uint64_t>();
      t->eval_round = tj.at("round").get<int64_t>();
      t->attempt = tj.at("attempt").get<uint32_t>();
      t->failures = tj.at("failures").get<int>();
      t->last_error = tj.at("error").get<std::string>();
      const int state = tj.at("state").get<int>();
      if (state < 0 || state > 2) return Status::Corruption("bad task state", "tasks");
      t->state = static_cast<Task::State>(state);
      t->lease_id = tj.at("lease").get<std::string>();
      if (t->row >= (EvalFromEvalSplit(*t) ? dataset_->eval_size() : dataset_->train_size())) {
        return Status::Corruption("task row out of range", "tasks");
      }
      tasks.emplace(t->id, std::move(t));
    }
    auto pending = j.at("pending").get<std::deque<std::string>>();
    auto eval_pending = j.at("eval_pending").get<std::deque<std::string>>();
    for (const auto* q : {&pending, &eval_pending}) {
      for (const std::string& id : *q) {
        if (tasks.count(id) == 0) return Status::Corruption("queued task unknown", "pending");
      }
    }
    SLUICE_ASSIGN_OR_RETURN(
        RecentIds completed,
        RecentIds::FromJson(j.at("completed"),
                            static_cast<size_t>(config_.remember_completed_tasks)));
    std::map<std::string, std::unique_ptr<LeaseEntry>> leases;
    for (const json& lj : j.at("leases")) {
      auto l = std::make_unique<LeaseEntry>();
      l->id = lj.at("id").get<std::string>();
      l->seq = lj.at("seq").get<uint64_t>();
      l->task_id = lj.at("task").get<std::string>();
      l->worker_id = lj.at("worker").get<std::string>();
      l->attempt = lj.at("attempt").get<uint32_t>();
      l->deadline_ns = lj.at("deadline").get<int64_t>();
      if (tasks.count(l->task_id) == 0) return Status::Corruption("lease task unknown", "leases");
      leases.emplace(l->id, std::move(l));
    }
    const json& pjs = j.at("policies");
    if (pjs.size() != policies_.size()) return Status::Corruption("policy count", "policies");
    std::vector<std::unique_ptr<PolicyState>> policies;
    for (size_t i = 0; i < pjs.size(); ++i) {
      const json& pj = pjs[i];
      auto p = std::make_unique<PolicyState>(PolicyState{.name = policies_[i]->name,
                                                         .version = {},
                                                         .announced = false,
                                                         .buffer = {},
                                                         .replay = policies_[i]->replay,
                                                         .replay_groups = {},
                                                         .counters = {},
                                                         .filters = policies_[i]->filters,
                                                         .acked_since_announce = false});
      if (pj.at("name").get<std::string>() != p->name) {
        return Status::Corruption("policy order differs", "policies");
      }
      p->version = VersionFromJson(pj.at("version"));
      p->announced = pj.at("announced").get<bool>();
      SLUICE_ASSIGN_OR_RETURN(p->buffer, GroupsFromJson(pj.at("buffer")));
      SLUICE_RETURN_IF_ERROR(p->replay.Deserialize(pj.at("replay")));
      SLUICE_ASSIGN_OR_RETURN(std::vector<BufferedGroup> replay_groups,
                              GroupsFromJson(pj.at("replay_groups")));
      for (BufferedGroup& g : replay_groups) {
        const uint64_t id = g.group_id;
        p->replay_groups.emplace(id, std::move(g));
      }
      for (const ReplayEntry& e : p->replay.entries()) {
        if (p->replay_groups.count(e.group_id) == 0) {
          return Status::Corruption("replay entry without its group", "replay_groups");
        }
      }
      CountersFromJson(pj.at("counters"), p->counters, kPolicyCounterFields);
      // Absent in snapshots written before it was kept.
      p->acked_since_announce = pj.value("acked_since_announce", false);
      const json& fj = pj.at("filters");
      if (fj.size() != p->filters.size()) return Status::Corruption("filter count", "filters");
      for (size_t f = 0; f < fj.size(); ++f) {
        p->filters[f].groups_dropped = fj[f].at(1).get<int64_t>();
        p->filters[f].samples_dropped = fj[f].at(2).get<int64_t>();
      }
      policies.push_back(std::move(p));
    }
    std::map<std::string, std::shared_ptr<OutstandingBatch>> outstanding;
    for (const json& bj : j.at("outstanding")) {
      auto b = std::make_unique<OutstandingBatch>();
      b->id = bj.at("id").get<std::string>();
      b->policy = bj.at("policy").get<std::string>();
      b->version = bj.at("version").get<int64_t>();
      b->served_at_ns = bj.at("served_at").get<int64_t>();
      b->serves = bj.at("serves").get<int64_t>();
      b->fresh_groups = bj.at("fresh").get<int64_t>();
      b->replayed = bj.at("replayed").get<std::vector<uint8_t>>();
      b->stats = bj.at("stats");
      SLUICE_ASSIGN_OR_RETURN(b->groups, GroupsFromJson(bj.at("groups")));
      if (b->replayed.size() != b->groups.size() || FindPolicy(b->policy) == nullptr) {
        return Status::Corruption("malformed batch " + b->id, "outstanding");
      }
      outstanding.emplace(b->id, std::move(b));
    }
    SLUICE_ASSIGN_OR_RETURN(
        RecentIds acked,
        RecentIds::FromJson(j.at("acked"), static_cast<size_t>(config_.remember_acked_batches)));
    std::map<int64_t, std::unique_ptr<EvalRound>> rounds;
    for (const json& rj : j.at("eval_rounds")) {
      auto r = std::make_unique<EvalRound>();
      r->id = rj.at("id").get<int64_t>();
      r->policy = rj.at("policy").get<std::string>();
      r->version = rj.at("version").get<int64_t>();
      r->outstanding = rj.at("outstanding").get<int64_t>();
      r->failed = rj.at("failed").get<int64_t>();
      for (const json& ij : rj.at("items")) {
        EvalItem item;
        item.dataset = ij.at("dataset").get<std::string>();
        item.prompt_id = ij.at("prompt").get<std::string>();
        item.rewards = ij.at("rewards").get<std::vector<double>>();
        item.correct = ij.at("correct").get<std::vector<uint8_t>>();
        // Snapshots written before episodes were kept have none: the round reports no figures.
        if (auto e = ij.find("episodes"); e != ij.end()) item.episodes = EvalEpisodesFromJson(*e);
        r->items.push_back(std::move(item));
      }
      rounds.emplace(r->id, std::move(r));
    }

    rng_ = rng;
    cursor_ = std::move(cursor);
    curator_ = std::move(curator);
    counters_ = std::move(counters);
    tasks_ = std::move(tasks);
    pending_ = std::move(pending);
    eval_pending_ = std::move(eval_pending);
    completed_ = std::move(completed);
    leases_ = std::move(leases);
    policies_ = std::move(policies);
    outstanding_ = std::move(outstanding);
    acked_ = std::move(acked);
    eval_rounds_ = std::move(rounds);
    last_eval_ = j.at("last_eval");
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("snapshot: ") + e.what());
  }
  changed_.notify_all();
  return Status::Ok();
}

}  // namespace sluice::dataflow
