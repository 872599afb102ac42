// DigitMatchReward ("digit-match"): partial credit for integer answers, digit by digit, so a
// policy learning arithmetic is rewarded for getting the low digits right before the whole number.
//
// The answer is found and normalised as exact-match does (FinalAnswerText with `extract` on, the
// default; then NormaliseAnswer). An answer that is not an integer (an optional leading '-', then
// one or more ASCII digits; nothing else, not even '+' or a thousands separator) scores 0. Both
// integers are first put in canonical form: leading zeros dropped ("007" -> "7") and "-0" -> "0",
// so the score is 1 exactly when the two integers are equal. Then, with the digits right-aligned:
//   score = matched / max(length(answer), length(reference))
// where a length counts the digits plus 1 for a '-', and `matched` counts the positions (from the
// right) where both have a digit and the digits are equal, plus 1 for the sign when both are
// negative. "42" vs "43": 1/2; "142" vs "42": 2/3; "-42" vs "42": 2/3; "-42" vs "-42": 1.
//
// A reference that is not an integer is a dataset mistake, not a wrong answer: it scores 0 with
// `error` set, so the worker counts it (sluice_rollout_reward_errors_total).
//
// Ownership and thread safety: immutable after Create; Score may run on many threads at once.
// CanonicalInteger and DigitMatchScore are pure functions, linear in their inputs' length.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {

// `text` as a canonical integer: "-" (only for a non-zero value) then digits without leading
// zeros ("007" -> "7", "-00" -> "0"). nullopt unless `text` is an optional '-' then one or more
// ASCII digits. `text` is taken as is: normalise it first.
std::optional<std::string> CanonicalInteger(std::string_view text);

// The digit-match score (above) of two already-normalised texts, in [0, 1]; 0 when either is not
// an integer.
double DigitMatchScore(std::string_view answer, std::string_view reference);

class DigitMatchReward final : public Reward {
 public:
  struct Options {
    bool extract = true;  // Score FinalAnswerText(response), not the whole response.
  };

  explicit DigitMatchReward(Options options) : options_(options) {}

  // Reads spec.reward.options: {"extract": bool}, as exact-match. InvalidArgument naming the key
  // ("reward.options.extract") for a value of the wrong type or an unknown key.
  static Result<std::unique_ptr<DigitMatchReward>> Create(const nlohmann::json& options);

  std::string_view name() const override { return "digit-match"; }
  // Score in [0, 1]; detail quotes both sides and the positions matched. Sets error only for a
  // reference that is not an integer.
  RewardOutcome Score(const RewardInput& input) const override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::rollout
