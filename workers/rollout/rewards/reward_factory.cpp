// MakeReward and ScoreSafely (declared in reward.h): the one place that maps spec.reward's type
// onto a Reward, and the guard that keeps a failing reward from taking the worker down.
#include <cmath>
#include <exception>
#include <string>

#include "workers/rollout/rewards/code_exec_reward.h"
#include "workers/rollout/rewards/digit_match.h"
#include "workers/rollout/rewards/exact_match.h"
#include "workers/rollout/rewards/math_equivalence.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {
namespace {

// Moves a Result of a concrete reward into a Result of the interface.
template <typename T>
Result<std::unique_ptr<Reward>> AsReward(Result<std::unique_ptr<T>> made) {
  if (!made.ok()) return made.status();
  return std::unique_ptr<Reward>(std::move(made).value());
}

}  // namespace

Result<std::unique_ptr<Reward>> MakeReward(const nlohmann::json& spec) {
  // An absent spec.reward (null) is the default reward with default options.
  if (!spec.is_null() && !spec.is_object()) {
    return Status::InvalidArgument("must be an object, got " + std::string(spec.type_name()),
                                   "reward");
  }
  std::string type = "exact-match";
  nlohmann::json options = nlohmann::json::object();
  if (spec.is_object()) {
    if (const auto it = spec.find("type"); it != spec.end() && !it->is_null()) {
      if (!it->is_string()) {
        return Status::InvalidArgument("must be a string, got " + std::string(it->type_name()),
                                       "reward.type");
      }
      type = it->get<std::string>();
    }
    if (const auto it = spec.find("options"); it != spec.end() && !it->is_null()) {
      if (!it->is_object()) {
        return Status::InvalidArgument("must be an object, got " + std::string(it->type_name()),
                                       "reward.options");
      }
      options = *it;
    }
    for (const auto& [key, value] : spec.items()) {
      if (key != "type" && key != "options") {
        return Status::InvalidArgument("unknown field; a reward has \"type\" and \"options\"",
                                       "reward." + key);
      }
    }
  }
  if (type == "exact-match") return AsReward(ExactMatchReward::Create(options));
  if (type == "digit-match") return AsReward(DigitMatchReward::Create(options));
  if (type == "math") return AsReward(MathReward::Create(options));
  if (type == "code-exec") return AsReward(CodeExecReward::Create(options));
  if (type == "verifier") {
    return Status::InvalidArgument("'verifier' is scored by the solve-and-verify workflow",
                                   "reward.type");
  }
  return Status::InvalidArgument(
      "must be one of \"exact-match\", \"digit-match\", \"math\", \"code-exec\", "
      "\"verifier\"; got \"" +
          type + "\"",
      "reward.type");
}

RewardOutcome ScoreSafely(const Reward& reward, const RewardInput& input) {
  RewardOutcome outcome;
  try {
    outcome = reward.Score(input);
  } catch (const std::exception& e) {
    return {.score = 0, .error = true, .detail = e.what()};
  } catch (...) {
    return {.score = 0, .error = true, .detail = "a non-standard exception"};
  }
  // The trainer sums scores into advantages: a NaN or out-of-range score would poison a whole
  // batch, so it is the reward's failure, not a score.
  if (!std::isfinite(outcome.score) || outcome.score < 0 || outcome.score > 1) {
    return {.score = 0,
            .error = true,
            .detail = std::string(reward.name()) + " returned score " +
                      std::to_string(outcome.score) + ", outside [0, 1]"};
  }
  if (outcome.error) outcome.score = 0;
  return outcome;
}

}  // namespace sluice::rollout
