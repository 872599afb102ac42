#include "workers/rollout/rewards/exact_match.h"

#include <string>

#include "workers/rollout/rewards/answer_extraction.h"

namespace sluice::rollout {

Result<std::unique_ptr<ExactMatchReward>> ExactMatchReward::Create(const nlohmann::json& options) {
  if (!options.is_object()) {
    return Status::InvalidArgument("must be an object, got " + std::string(options.type_name()),
                                   "reward.options");
  }
  Options parsed;
  for (const auto& [key, value] : options.items()) {
    const std::string field = "reward.options." + key;
    if (key == "extract") {
      if (!value.is_boolean()) {
        return Status::InvalidArgument("must be a boolean, got " + std::string(value.type_name()),
                                       field);
      }
      parsed.extract = value.get<bool>();
    } else {
      return Status::InvalidArgument("unknown option for exact-match; the only one is \"extract\"",
                                     field);
    }
  }
  return std::make_unique<ExactMatchReward>(parsed);
}

RewardOutcome ExactMatchReward::Score(const RewardInput& input) const {
  const std::string given =
      options_.extract ? FinalAnswerText(input.response) : std::string(input.response);
  const std::string normalised = NormaliseAnswer(given);
  RewardOutcome outcome;
  if (normalised == NormaliseAnswer(input.answer)) {
    outcome.score = 1;
    outcome.detail = "answer matches";
  } else {
    outcome.detail = "answer " + QuoteExcerpt(normalised) + " does not match " +
                     QuoteExcerpt(NormaliseAnswer(input.answer));
  }
  return outcome;
}

}  // namespace sluice::rollout
