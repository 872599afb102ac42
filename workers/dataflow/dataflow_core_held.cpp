// DataflowCore's held acknowledgements (dataflow_core.h, "Held acknowledgements"): batches a
// checkpointing trainer trained but has not yet made durable, released after its checkpoint and
// taken back when it restarts from an older one, so every batch is trained exactly once in the
// weights that survive a trainer crash.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

void DataflowCore::UnconsumeLocked(PolicyState& p, const OutstandingBatch& b) {
  if (config_.replay.replay_ratio > 0) {
    for (size_t i = 0; i < b.groups.size(); ++i) {
      if (b.replayed[i] != 0) continue;
      p.replay.Remove(b.groups[i].group_id);
      p.replay_groups.erase(b.groups[i].group_id);
    }
  }
  --p.counters.acked_batches;
  p.counters.acked_groups -= b.fresh_groups;
}

Result<int64_t> DataflowCore::ReleaseHeldLocked(std::string_view policy, int64_t through) {
  PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return Status::NotFound("no policy " + std::string(policy));
  if (through < 0) {
    return Status::InvalidArgument("through: must be >= 0, not " + std::to_string(through));
  }
  int64_t released = 0;
  while (!p->held.empty() && p->held.begin()->first <= through) {
    p->held.erase(p->held.begin());
    ++released;
  }
  if (released > 0) dirty_ = true;
  return released;
}

Result<int64_t> DataflowCore::ResumeHeldLocked(std::string_view policy, int64_t through) {
  SLUICE_RETURN_IF_ERROR(ReleaseHeldLocked(policy, through).status());
  PolicyState& p = *FindPolicy(policy);
  // The unacknowledged batches of the policy (the dead trainer's batch in hand), oldest serve
  // first, go after the taken-back ones.
  std::vector<OutstandingBatch*> in_hand;
  for (auto& [id, b] : outstanding_) {
    if (b->policy == p.name) in_hand.push_back(b.get());
  }
  std::sort(in_hand.begin(), in_hand.end(),
            [](const OutstandingBatch* a, const OutstandingBatch* b) {
              return a->served_at_ns < b->served_at_ns;
            });
  // Newest first, so replay memory loses the groups in the reverse order it gained them.
  int64_t taken_back = 0;
  for (auto h = p.held.rbegin(); h != p.held.rend(); ++h) {
    UnconsumeLocked(p, *h->second);
    ++taken_back;
  }
  // All are due now, and served again in the order they were trained (TakeBatch re-serves the
  // oldest serve first): serve times 1, 2, ... in hold order, then the batches in hand.
  int64_t order = 0;
  for (auto& [seq, b] : p.held) {
    b->served_at_ns = ++order;
    outstanding_.emplace(b->id, std::move(b));
  }
  p.held.clear();
  for (OutstandingBatch* b : in_hand) {
    if (b->served_at_ns != ++order) dirty_ = true;
    b->served_at_ns = order;
  }
  if (taken_back > 0) dirty_ = true;
  return taken_back;
}

Result<int64_t> DataflowCore::ReleaseHeld(std::string_view policy, int64_t through) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Result<int64_t> r = ReleaseHeldLocked(policy, through);
  if (dirty_) {
    Emit(RecordType::kReleaseHeld, {{"now", now}, {"policy", policy}, {"through", through}});
    changed_.notify_all();
  }
  return r;
}

Result<int64_t> DataflowCore::ResumeHeld(std::string_view policy, int64_t through) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Result<int64_t> r = ResumeHeldLocked(policy, through);
  if (dirty_) {
    Emit(RecordType::kResumeHeld, {{"now", now}, {"policy", policy}, {"through", through}});
    changed_.notify_all();
  }
  return r;
}

}  // namespace sluice::dataflow
