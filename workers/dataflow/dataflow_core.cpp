// DataflowCore's construction (config validation), the helpers every part of it uses, and
// ingest: Submit, which validates a finished group and files it into the policies' buffers (or
// its eval round). The other concerns live in dataflow_core_*.cpp (leases, batches, versions,
// eval rounds, status, records, snapshots); dataflow_core_state.h holds the state they share.
#include "workers/dataflow/dataflow_core.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/algorithms/curators.h"
#include "workers/dataflow/algorithms/eval_episodes.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/group_stats.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/splitting.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

using core_internal::ToNs;

namespace {

Status Prefixed(const Status& s, const std::string& prefix) {
  return Status(s.code(), s.message(), s.field().empty() ? prefix : prefix + "." + s.field());
}

}  // namespace

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
                                                       .acked_since_announce = false,
                                                       .held = {},
                                                       .held_seq = 0});
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

DataflowCore::~DataflowCore() = default;

// ---- Helpers. ----

bool DataflowCore::EvalFromEvalSplit(const Task& task) const {
  return task.eval && !config_.eval.from_train;
}

const PromptRow& DataflowCore::RowOf(const Task& task) const {
  return EvalFromEvalSplit(task) ? dataset_->eval(task.row) : dataset_->train(task.row);
}

int64_t DataflowCore::NowNs() const { return ToNs(clock_->WallNow()); }

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

double DataflowCore::TrajectoryReward(const Sample& s) const {
  if (s.policies.empty()) return s.reward;
  for (size_t i = 0; i < s.policies.size(); ++i) {
    if (s.policies[i] == config_.policies[0]) return s.policy_rewards[i];
  }
  return s.policy_rewards[0];
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

}  // namespace sluice::dataflow
