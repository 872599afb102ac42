#include "workers/dataflow/algorithms/admission.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::dataflow {

int64_t FreshGroupsPerBatch(int64_t groups_per_batch, double replay_ratio) {
  const auto replayed =
      static_cast<int64_t>(std::floor(static_cast<double>(groups_per_batch) * replay_ratio));
  return std::max<int64_t>(1, groups_per_batch - replayed);
}

AdmissionDecision DecideAdmission(std::span<const PolicyLoad> policies, int64_t train_leases,
                                  int64_t capacity_groups, int64_t max_staleness) {
  AdmissionDecision best;
  int64_t tightest = std::numeric_limits<int64_t>::max();
  for (const PolicyLoad& p : policies) {
    const int64_t batches =
        std::max<int64_t>(0, max_staleness + 1 - std::max<int64_t>(0, p.lag_versions));
    const int64_t budget = batches * std::max<int64_t>(1, p.fresh_per_batch);
    const bool staleness_binds = budget < capacity_groups;
    const int64_t limit = staleness_binds ? budget : capacity_groups;
    const int64_t room = limit - p.buffered - p.unacked_fresh - train_leases;
    if (room < tightest) {
      tightest = room;
      best.limit = staleness_binds ? "staleness" : "capacity";
      best.policy = p.policy;
    }
  }
  best.room = policies.empty() ? 0 : std::max<int64_t>(0, tightest);
  return best;
}

int64_t RolloutDemand(const RolloutDemandInput& in) {
  const int64_t train_available =
      std::max<int64_t>(0, in.pending_train_tasks) + std::max<int64_t>(0, in.unleased_prompts);
  const int64_t train = std::min(std::max<int64_t>(0, in.admission_room), train_available);
  return std::max<int64_t>(0, in.leases_in_flight) + std::max<int64_t>(0, in.pending_eval_tasks) +
         train;
}

}  // namespace sluice::dataflow
