#include "workers/dataflow/algorithms/drain_state.h"

namespace sluice::dataflow {

namespace {

std::string Plural(int64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string CountReason(const DrainPolicyInput& p) {
  std::string groups = Plural(p.usable_groups, "buffered group");
  if (p.usable_groups < p.buffered_groups) {
    groups += " (of " + std::to_string(p.buffered_groups) + "; the others are stale)";
  }
  std::string batch = "a batch of " + std::to_string(p.batch_groups);
  if (p.fresh_needed < p.batch_groups) {
    batch += " (" + std::to_string(p.fresh_needed) + " of them fresh)";
  }
  return "the " + groups + " of policy " + p.policy + " cannot fill " + batch;
}

// The version `p` ends at once drained.
int64_t FinalVersion(const DrainPolicyInput& p) { return p.version + (p.announce_due ? 1 : 0); }

}  // namespace

DrainState DecideDrain(const DrainInput& input) {
  DrainState state;
  state.exhausted =
      input.dataset_done && input.pending_train_tasks == 0 && input.leased_train_tasks == 0;
  for (const DrainPolicyInput& p : input.policies) state.policies.push_back({p.policy, false, ""});
  if (!state.exhausted) return state;
  const size_t n = input.policies.size();
  for (size_t i = 0; i < n; ++i) {
    const DrainPolicyInput& p = input.policies[i];
    if (p.unacked_batches == 0 && p.usable_groups < p.fresh_needed) {
      state.policies[i].drained = true;
      state.policies[i].reason = CountReason(p);
    }
  }
  if (!input.version_barrier) return state;
  // Only policies drained by count need checking: one drained at the barrier waits for such a
  // policy Q, so its final version exceeds Q's, and whoever waits for it waits for Q as well.
  const std::vector<PolicyDrain> by_count = state.policies;
  for (size_t i = 0; i < n; ++i) {
    const DrainPolicyInput& p = input.policies[i];
    if (state.policies[i].drained || p.unacked_batches > 0) continue;
    for (size_t j = 0; j < n; ++j) {
      const DrainPolicyInput& q = input.policies[j];
      if (!by_count[j].drained || FinalVersion(q) >= p.version) continue;
      state.policies[i].drained = true;
      state.policies[i].reason = "policy " + p.policy + " waits at the version barrier (version " +
                                 std::to_string(p.version) + ") for policy " + q.policy +
                                 ", which can no longer train (version " +
                                 std::to_string(FinalVersion(q)) + ")";
      break;
    }
  }
  return state;
}

std::string DrainedMessage(int64_t epochs, const std::string& reason) {
  return "the dataset is exhausted (epoch " + std::to_string(epochs) + " of " +
         std::to_string(epochs) + ") and " + reason;
}

}  // namespace sluice::dataflow
