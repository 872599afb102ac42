// Reward: scores one finished episode's answer against the task's reference.
//
// The Dataflow's spec.reward ({type, options}) picks the reward (MakeReward):
//   exact-match  1 when the normalised answer equals the normalised reference (exact_match.h)
//   digit-match  partial credit for integer answers: the share of right-aligned digit positions
//                (and the sign) that match the reference; 1 only when equal (digit_match.h)
//   math         1 when the answer is numerically/symbolically equivalent (math_equivalence.h)
//   code-exec    fraction of the row's test cases the program passes, run in a sandbox
//                (code_exec_reward.h)
//   verifier     scored by the solve-and-verify workflow itself, not here
//
// Contract: Score never throws and never crashes the worker. A reward whose computation fails
// (an exception, a timeout, a sandbox failure) scores 0 with `error` set, and the worker counts it
// (sluice_rollout_reward_errors_total). Scores are in [0, 1].
//
// Thread safety: Score is const and may be called from many threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::rollout {

struct RewardInput {
  std::string_view response;  // The model's final answer text (the whole completion).
  std::string_view answer;    // The task's reference answer (dataset answer column).
  // The dataset row verbatim (code-exec reads its test cases from it); never null.
  const nlohmann::json* row = nullptr;
};

struct RewardOutcome {
  double score = 0;    // In [0, 1].
  bool error = false;  // The reward failed or timed out; score is 0.
  std::string detail;  // Why (for logs): "timeout", "3/4 tests passed", the exception text.
};

class Reward {
 public:
  virtual ~Reward() = default;
  virtual std::string_view name() const = 0;  // "exact-match", "digit-match", "math", ...
  virtual RewardOutcome Score(const RewardInput& input) const = 0;
};

// The reward spec.reward describes: {"type": "...", "options": {...}}. InvalidArgument naming the
// field ("reward.type", "reward.options.timeoutSeconds") for an unknown type or a bad option;
// "verifier" is InvalidArgument here (the solve-and-verify workflow scores it).
Result<std::unique_ptr<Reward>> MakeReward(const nlohmann::json& spec);

// Calls reward.Score, turning an exception into a 0 score with error set.
RewardOutcome ScoreSafely(const Reward& reward, const RewardInput& input);

}  // namespace sluice::rollout
