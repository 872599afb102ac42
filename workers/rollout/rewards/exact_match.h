// ExactMatchReward ("exact-match"): 1 when the completion's final answer, normalised, equals the
// normalised reference answer; else 0.
//
// With extract on (the default) the final answer is FinalAnswerText(response) (a box, an <answer>
// tag, an "answer is" line, else the whole completion); with it off the whole completion is
// compared, for prompts that ask for the bare answer and should not reward answers buried in
// prose. Both sides then go through NormaliseAnswer (answer_extraction.h).
//
// Ownership and thread safety: immutable after Create; Score may run on many threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {

class ExactMatchReward final : public Reward {
 public:
  struct Options {
    bool extract = true;  // Compare FinalAnswerText(response), not the whole response.
  };

  explicit ExactMatchReward(Options options) : options_(options) {}

  // Reads spec.reward.options: {"extract": bool}. InvalidArgument naming the key
  // ("reward.options.extract") for a value of the wrong type or an unknown key.
  static Result<std::unique_ptr<ExactMatchReward>> Create(const nlohmann::json& options);

  std::string_view name() const override { return "exact-match"; }
  // Score 1 or 0; detail says which answer was compared. Never sets error.
  RewardOutcome Score(const RewardInput& input) const override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::rollout
