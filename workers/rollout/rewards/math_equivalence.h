// Math answer equivalence, and MathReward ("math"): 1 when the completion's final answer is
// numerically (or, failing that, textually) the same as the reference.
//
// Both sides are first cleaned the same way: a \boxed{} is unwrapped; $...$, \(...\), \[...\]
// delimiters, \left, \right, \displaystyle, the spacing commands \, \! \; \: \quad, the currency
// sign \$ and degree marks (^\circ, °) are dropped; \dfrac and \tfrac become \frac; \text{},
// \textbf{}, \mathrm{}, \mathbf{}, \mbox{} are unwrapped, except that one ending the answer after
// other content is a unit and dropped ("5\text{ cm}" -> "5"); of an equation only the right-hand
// side of its last '=' is kept ("x = 5" -> "5"; in a list, of each element: "x=1, y=2" is the list
// "1, 2"; an inequality such as "x <= 5" stays whole); "1,234" (digits grouped by threes, the
// whole answer) loses its separators; whitespace and one trailing period go.
//
// Percent (a choice): "50%" parses as 50, and MathEquivalent also accepts 50% for 0.5 when only
// one side carries the '%'. So "50%" matches "50", "50\%" and "0.5"; "50%" vs "0.5%" does not.
//
// Mixed numbers (a choice): a literal directly followed by a fraction ("2\frac{1}{2}") is 2½ in
// print but 2·½ in TeX; neither is assumed, it does not parse and is compared as text.
//
// Ownership and thread safety: pure functions; MathReward is immutable after Create and Score may
// run on many threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/status.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {

// The value of a numeric answer after the cleaning above, or nullopt when it is not one (a
// variable, a tuple, a division by zero, a non-finite result). Understands integers, decimals,
// "1e-3", signs, + - * / \cdot \times \div, implicit products ("2\pi", "3\sqrt{2}", "2(3)"),
// parentheses and TeX groups, \frac{a}{b} and the shorthand \frac12, \sqrt{n}, \sqrt[k]{n},
// \pi, a^b and a**b with an integer exponent (a brace-less exponent takes all its digits, as
// plain text means: "2^10" is 1024), and a trailing '%' (ignored: "50%" is 50).
std::optional<double> ParseMathValue(std::string_view text);

// Whether answer `a` is equivalent to reference `b`. Both are cleaned (see above); then:
//   - an answer that is blank after cleaning is equivalent to nothing;
//   - tuples, intervals and sets ("(1, 2)", "[0, 1)", "\{1, 2\}", or a bare "1, 2") match when
//     the brackets are the same and the elements match pairwise, in order;
//   - when both parse (ParseMathValue), |a - b| <= tolerance * max(1, |b|) (percent: see above);
//   - otherwise the cleaned texts must be equal (also after "x^{2}" -> "x^2"), so equal symbolic
//     answers such as "\frac{a}{b}" and "\dfrac{a}{b}" match.
// `tolerance` >= 0; relative for |b| > 1, absolute below.
bool MathEquivalent(std::string_view a, std::string_view b, double tolerance);

class MathReward final : public Reward {
 public:
  struct Options {
    double tolerance = 1e-6;  // MathEquivalent's, >= 0.
  };

  explicit MathReward(Options options) : options_(options) {}

  // Reads spec.reward.options: {"tolerance": number >= 0}. InvalidArgument naming the key
  // ("reward.options.tolerance") for a bad value or an unknown key.
  static Result<std::unique_ptr<MathReward>> Create(const nlohmann::json& options);

  std::string_view name() const override { return "math"; }
  // Score 1 when MathEquivalent(FinalAnswerText(response), answer, tolerance), else 0. Never sets
  // error.
  RewardOutcome Score(const RewardInput& input) const override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::rollout
