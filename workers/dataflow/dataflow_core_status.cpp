// What DataflowCore reports and waits for: backpressure, the status document, the end of the
// data (the drain decision, algorithms/drain_state.h) and the long polls of the HTTP layer
// (WaitForWork, WaitForBatch). None of it changes state.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/algorithms/admission.h"
#include "workers/dataflow/algorithms/drain_state.h"
#include "workers/dataflow/algorithms/staleness.h"
#include "workers/dataflow/algorithms/version_barrier.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"

namespace sluice::dataflow {

using core_internal::CoreCounters;
using core_internal::CountersToJson;
using core_internal::kPolicyCounterFields;
using core_internal::Ns;
using nlohmann::json;

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
    // Acknowledged, kept until the trainer's checkpoint (AckHeld), and the newest hold number.
    j["held_batches"] = static_cast<int64_t>(p->held.size());
    j["held_seq"] = p->held_seq;
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

}  // namespace sluice::dataflow
