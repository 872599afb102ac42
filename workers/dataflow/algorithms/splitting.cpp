#include "workers/dataflow/algorithms/splitting.h"

#include <utility>

namespace sluice::dataflow {

Result<std::vector<Sample>> SplitByPolicy(const Sample& trajectory) {
  SLUICE_RETURN_IF_ERROR(ValidateSample(trajectory));
  std::vector<Sample> out;
  if (trajectory.token_owner.empty()) {
    Sample single = trajectory;
    if (trajectory.policies.size() == 1) {
      single.policy = trajectory.policies[0];
      single.reward = trajectory.policy_rewards[0];
    } else if (!(trajectory.policies.empty() && !trajectory.policy.empty())) {
      return Status::InvalidArgument(
          "a trajectory without per-token owners must name exactly one policy", "token_owner");
    }
    out.push_back(std::move(single));
    return out;
  }
  const size_t n = trajectory.tokens.size();
  std::vector<bool> owns(trajectory.policies.size(), false);
  for (int32_t o : trajectory.token_owner) {
    if (o != kNoOwner) owns[static_cast<size_t>(o)] = true;
  }
  for (size_t p = 0; p < owns.size(); ++p) {
    if (!owns[p]) continue;
    Sample s = trajectory;
    s.policy = trajectory.policies[p];
    s.reward = trajectory.policy_rewards[p];
    for (size_t t = 0; t < n; ++t) {
      if (trajectory.token_owner[t] == static_cast<int32_t>(p)) continue;
      s.loss_mask[t] = 0;
      s.behaviour_logprobs[t] = 0.0F;
      s.versions[t] = kNoVersion;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace sluice::dataflow
