#include "workers/rollout/rewards/exact_match.h"

#include <string>

#include "workers/rollout/rewards/answer_extraction.h"
#include "workers/rollout/rewards/extract_option.h"

namespace sluice::rollout {

Result<std::unique_ptr<ExactMatchReward>> ExactMatchReward::Create(const nlohmann::json& options) {
  SLUICE_ASSIGN_OR_RETURN(const bool extract, ParseExtractOption(options));
  Options parsed;
  parsed.extract = extract;
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
