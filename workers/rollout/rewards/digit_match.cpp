#include "workers/rollout/rewards/digit_match.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "workers/rollout/rewards/answer_extraction.h"
#include "workers/rollout/rewards/extract_option.h"

namespace sluice::rollout {
namespace {

// Positions matched and positions compared (the score's numerator and denominator) of two
// canonical integers.
struct DigitMatchCount {
  size_t matched = 0;
  size_t positions = 0;
};

DigitMatchCount CountDigitMatch(std::string_view a, std::string_view b) {
  const bool a_negative = a.front() == '-';
  const bool b_negative = b.front() == '-';
  const std::string_view a_digits = a.substr(a_negative ? 1 : 0);
  const std::string_view b_digits = b.substr(b_negative ? 1 : 0);
  DigitMatchCount count;
  count.positions = std::max(a.size(), b.size());  // Sizes include the '-'.
  const size_t common = std::min(a_digits.size(), b_digits.size());
  for (size_t i = 1; i <= common; ++i) {
    if (a_digits[a_digits.size() - i] == b_digits[b_digits.size() - i]) ++count.matched;
  }
  if (a_negative && b_negative) ++count.matched;
  return count;
}

}  // namespace

std::optional<std::string> CanonicalInteger(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  std::string_view digits = text.substr(negative ? 1 : 0);
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string_view::npos) return std::string("0");  // "0", "000", "-0".
  digits.remove_prefix(first);
  return (negative ? "-" : "") + std::string(digits);
}

double DigitMatchScore(std::string_view answer, std::string_view reference) {
  const std::optional<std::string> a = CanonicalInteger(answer);
  const std::optional<std::string> b = CanonicalInteger(reference);
  if (!a || !b) return 0;
  const DigitMatchCount count = CountDigitMatch(*a, *b);
  return static_cast<double>(count.matched) / static_cast<double>(count.positions);
}

Result<std::unique_ptr<DigitMatchReward>> DigitMatchReward::Create(const nlohmann::json& options) {
  SLUICE_ASSIGN_OR_RETURN(const bool extract, ParseExtractOption(options));
  Options parsed;
  parsed.extract = extract;
  return std::make_unique<DigitMatchReward>(parsed);
}

RewardOutcome DigitMatchReward::Score(const RewardInput& input) const {
  const std::string given = NormaliseAnswer(options_.extract ? FinalAnswerText(input.response)
                                                             : std::string(input.response));
  const std::string expected = NormaliseAnswer(input.answer);
  RewardOutcome outcome;
  const std::optional<std::string> reference = CanonicalInteger(expected);
  if (!reference) {
    outcome.error = true;
    outcome.detail = "reference " + QuoteExcerpt(expected) + " is not an integer";
    return outcome;
  }
  const std::optional<std::string> answer = CanonicalInteger(given);
  if (!answer) {
    outcome.detail = "answer " + QuoteExcerpt(given) + " is not an integer";
    return outcome;
  }
  const DigitMatchCount count = CountDigitMatch(*answer, *reference);
  outcome.score = static_cast<double>(count.matched) / static_cast<double>(count.positions);
  outcome.detail = "answer " + QuoteExcerpt(*answer) + " vs " + QuoteExcerpt(*reference) + ": " +
                   std::to_string(count.matched) + "/" + std::to_string(count.positions) +
                   " positions match";
  return outcome;
}

}  // namespace sluice::rollout
