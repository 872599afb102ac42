// DataflowCore's task leases: admission control, handing out tasks (eval tasks first, then
// re-queued train tasks, then new prompts past the curator), renewals, releases and expiry, and
// what a failed attempt does to its task (dataflow_core.h, "Lease order", "Admission control",
// "Expiry").
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workers/dataflow/algorithms/admission.h"
#include "workers/dataflow/algorithms/curators.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

using core_internal::FromNs;
using core_internal::Ns;

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

}  // namespace sluice::dataflow
