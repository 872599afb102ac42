// Admission control: how many more train tasks may be leased right now; and the rollout demand
// derived from it, the signal RolloutPool autoscaling scales on.
//
// Two limits, the tighter of which applies per policy:
//   capacity   spec.buffer.capacity, in groups: memory. Buffered + unacknowledged fresh groups
//              + train tasks under lease stay within it.
//   staleness  (maxStaleness + 1) fresh groups per batch: only as much work as the trainer can
//              consume before it goes stale (AReaL's bound on off-policyness). A group produced
//              against version v has at most (maxStaleness + 1) * F - 1 groups ahead of it
//              (buffered, leased, or in the batch being trained), so it is served within
//              maxStaleness versions of v instead of being generated only to be dropped.
// A worker whose weights lag the newest version by L versions produces samples that are L
// versions old at birth (the newest counts one more while a batch is acknowledged and its
// version not yet announced: the trainer holds that version already), so its lease sees a budget of
// (maxStaleness + 1 - L) batches (none once L > maxStaleness: it must load the newer weights its
// lease reply names first). A train task of a multi-policy workflow adds one group to every policy,
// so each lease counts against every policy and the tightest one decides. Eval tasks produce no
// training groups and are never limited. Everything is counted in groups, with no version
// arithmetic, so the rule holds across trainer restarts and checkpoint resumes.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sluice::dataflow {

// One policy's load, in groups.
struct PolicyLoad {
  std::string policy;
  int64_t buffered = 0;         // Groups in its buffer.
  int64_t unacked_fresh = 0;    // Fresh groups in served, not yet acknowledged batches.
  int64_t fresh_per_batch = 1;  // Fresh (not replayed) groups one batch takes; >= 1.
  int64_t lag_versions = 0;     // Newest version - the leasing worker's loaded version; >= 0.
};

struct AdmissionDecision {
  int64_t room = 0;    // Train tasks that may still be leased; >= 0.
  std::string limit;   // "capacity" or "staleness": which limit binds; "" without policies.
  std::string policy;  // The policy whose limit binds.
};

// Fresh groups a batch of `groups_per_batch` takes when a share `replay_ratio` of it is replayed
// (the replay module's split: floor(G * ratio) replayed), at least 1.
int64_t FreshGroupsPerBatch(int64_t groups_per_batch, double replay_ratio);

// `train_leases`: train tasks under lease now. `capacity_groups`: spec.buffer.capacity in groups
// (>= 1). `max_staleness`: versions (>= 0).
AdmissionDecision DecideAdmission(std::span<const PolicyLoad> policies, int64_t train_leases,
                                  int64_t capacity_groups, int64_t max_staleness);

// The rollout demand (sluice_dataflow_rollout_demand, the pool-wide total RolloutPool
// autoscaling divides by tasks per replica): tasks the rollout pool could be running right now.
// Leases in flight (train and eval) are work it has; queued eval tasks are never limited; train
// tasks count up to admission's room, and only as many as exist (re-queued ones plus prompts
// the dataset cursor has not handed out yet). So while rollouts are the bottleneck (the buffer
// is empty) the demand stays at the admission limit, and when the trainer is (buffered and
// unacknowledged groups fill the limit) it falls, whatever the pool's current size.
struct RolloutDemandInput {
  int64_t leases_in_flight = 0;     // Train and eval leases held now.
  int64_t pending_eval_tasks = 0;   // Queued eval tasks.
  int64_t pending_train_tasks = 0;  // Re-queued train tasks.
  int64_t unleased_prompts = 0;     // Train prompts the cursor has yet to hand out (all epochs).
  int64_t admission_room = 0;       // AdmissionDecision::room for a worker with the newest weights.
};
int64_t RolloutDemand(const RolloutDemandInput& in);

}  // namespace sluice::dataflow
