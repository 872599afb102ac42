// Evaluation figures read off whole episodes, besides the primary policy's correctness
// (eval_metrics.h): how the other policies of a multi-policy workflow did, and how often a tool
// agent called a tool. One episode is one eval completion (one trajectory).
//
// Other policies. The primary policy is the Dataflow's first (its answers are what accuracy
// scores); every other policy whose reward a trajectory carries (`policies` / `policy_rewards`)
// gets, pooled over the round's episodes that carry it:
//   mean_reward                its mean reward;
//   mean_reward_when_correct   its mean over those episodes where the primary policy earned the
//                              full reward (IsFullReward), nullopt when there is none;
//   mean_reward_when_wrong     its mean over the others, nullopt when there is none.
// In solve-and-verify the verifier's reward is 1 exactly when its verdict agrees with whether the
// solver's answer earned the full reward, so these are its agreement overall, on correct and on
// wrong answers: a verifier that always says "no" shows 0 when correct and 1 when wrong.
//
// Tool calls. Over the episodes whose trajectory carries a tool-call count (Sample::tool_calls:
// multi-turn workflows), tool_call_share = the share with at least one complete call; nullopt
// when no episode carries a count (workflows without tools).
//
// Pooled, not averaged per dataset: the figures describe episodes, and a round of one dataset
// (the common case) gives the same either way. Rewards must be finite (ValidateSample holds every
// submitted sample to that).
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

// A reward counts as the full reward (a correct answer) at >= 1 − 1e-9: the tolerance absorbs
// rounding in fractional rewards (passed / total); rewards above 1 count too.
bool IsFullReward(double reward);

struct PolicyReward {
  std::string policy;
  double reward = 0.0;

  bool operator==(const PolicyReward&) const = default;
};

// One eval completion as these figures see it.
struct EvalEpisode {
  bool correct = false;                               // The primary earned the full reward.
  std::vector<PolicyReward> others = {};              // Other policies' rewards, in order.
  std::optional<uint32_t> tool_calls = std::nullopt;  // As Sample::tool_calls.

  bool operator==(const EvalEpisode&) const = default;
};

// `sample` as an episode: `others` are its policies other than `primary`, in trajectory order.
EvalEpisode EvalEpisodeOf(const Sample& sample, std::string_view primary, bool correct);

struct PolicyEvalFigures {
  std::string policy;
  int64_t episodes = 0;          // Episodes carrying this policy's reward.
  int64_t correct_episodes = 0;  // Of those, with the primary policy's full reward.
  double mean_reward = 0.0;
  std::optional<double> mean_reward_when_correct = std::nullopt;
  std::optional<double> mean_reward_when_wrong = std::nullopt;

  bool operator==(const PolicyEvalFigures&) const = default;
};

struct EvalEpisodeFigures {
  std::vector<PolicyEvalFigures> policies = {};  // Sorted by name; empty with one policy.
  int64_t tool_call_episodes = 0;                // Episodes carrying a tool-call count,
  int64_t episodes_calling_tools = 0;            // and of those, with at least one call.
  std::optional<double> tool_call_share = std::nullopt;

  bool operator==(const EvalEpisodeFigures&) const = default;
};

EvalEpisodeFigures AggregateEvalEpisodes(std::span<const EvalEpisode> episodes);

// Adds the figures to an eval report object (status `eval.last`), only those that exist:
//   "policies": [{"policy", "episodes", "correct_episodes", "mean_reward",
//                 "mean_reward_when_correct", "mean_reward_when_wrong"}]   (when non-empty; the
//                 two conditional means only when defined)
//   "tool_call_share", "tool_call_episodes", "episodes_calling_tools"      (when a share exists)
void AddEvalEpisodeFigures(const EvalEpisodeFigures& figures, nlohmann::json* report);

// Episodes in snapshots: {"correct", "others": [[policy, reward], ...], "tool_calls" (when set)}.
// FromJson throws nlohmann::json::exception on a malformed value, as the snapshot reader around
// it expects.
nlohmann::json EvalEpisodesToJson(std::span<const EvalEpisode> episodes);
std::vector<EvalEpisode> EvalEpisodesFromJson(const nlohmann::json& j);

}  // namespace sluice::dataflow
