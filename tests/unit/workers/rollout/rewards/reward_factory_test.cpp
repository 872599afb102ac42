// MakeReward and ScoreSafely (reward.h).
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "workers/rollout/rewards/code_exec_reward.h"
#include "workers/rollout/rewards/digit_match.h"
#include "workers/rollout/rewards/exact_match.h"
#include "workers/rollout/rewards/math_equivalence.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

std::unique_ptr<Reward> Make(const json& spec) {
  Result<std::unique_ptr<Reward>> made = MakeReward(spec);
  EXPECT_TRUE(made.ok()) << spec.dump() << ": " << made.status().ToString();
  return made.ok() ? std::move(made).value() : nullptr;
}

Status MakeError(const json& spec) {
  Result<std::unique_ptr<Reward>> made = MakeReward(spec);
  EXPECT_FALSE(made.ok()) << spec.dump();
  return made.status();
}

TEST(MakeRewardTest, EachType) {
  const std::unique_ptr<Reward> exact = Make({{"type", "exact-match"}});
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact->name(), "exact-match");
  EXPECT_NE(dynamic_cast<const ExactMatchReward*>(exact.get()), nullptr);

  const std::unique_ptr<Reward> digits = Make({{"type", "digit-match"}});
  ASSERT_NE(digits, nullptr);
  EXPECT_EQ(digits->name(), "digit-match");
  EXPECT_NE(dynamic_cast<const DigitMatchReward*>(digits.get()), nullptr);

  const std::unique_ptr<Reward> math = Make({{"type", "math"}});
  ASSERT_NE(math, nullptr);
  EXPECT_EQ(math->name(), "math");
  EXPECT_NE(dynamic_cast<const MathReward*>(math.get()), nullptr);

  const std::unique_ptr<Reward> code = Make({{"type", "code-exec"}});
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->name(), "code-exec");
  EXPECT_NE(dynamic_cast<const CodeExecReward*>(code.get()), nullptr);
}

TEST(MakeRewardTest, DefaultsToExactMatch) {
  for (const json& spec : {json(nullptr), json::object(), json{{"options", {{"extract", false}}}},
                           json{{"type", nullptr}, {"options", nullptr}}}) {
    const std::unique_ptr<Reward> reward = Make(spec);
    ASSERT_NE(reward, nullptr) << spec.dump();
    EXPECT_EQ(reward->name(), "exact-match") << spec.dump();
  }
}

TEST(MakeRewardTest, PassesOptionsThrough) {
  const std::unique_ptr<Reward> exact = Make({{"options", {{"extract", false}}}});
  ASSERT_NE(exact, nullptr);
  EXPECT_FALSE(dynamic_cast<const ExactMatchReward&>(*exact).options().extract);

  const std::unique_ptr<Reward> digits =
      Make({{"type", "digit-match"}, {"options", {{"extract", false}}}});
  ASSERT_NE(digits, nullptr);
  EXPECT_FALSE(dynamic_cast<const DigitMatchReward&>(*digits).options().extract);

  const std::unique_ptr<Reward> math = Make({{"type", "math"}, {"options", {{"tolerance", 0.5}}}});
  ASSERT_NE(math, nullptr);
  EXPECT_EQ(dynamic_cast<const MathReward&>(*math).options().tolerance, 0.5);
  const json row = json::object();
  EXPECT_EQ(math->Score({.response = "\\boxed{1.4}", .answer = "1", .row = &row}).score, 1);

  const std::unique_ptr<Reward> code =
      Make({{"type", "code-exec"}, {"options", {{"timeoutSeconds", 3}}}});
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(dynamic_cast<const CodeExecReward&>(*code).options().timeout_seconds, 3);
}

TEST(MakeRewardTest, BadTypeNamesTheField) {
  const Status unknown = MakeError({{"type", "llm-judge"}});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.field(), "reward.type");
  for (const char* valid :
       {"exact-match", "digit-match", "math", "code-exec", "verifier", "llm-judge"}) {
    EXPECT_NE(unknown.message().find(valid), std::string::npos) << unknown.message();
  }

  const Status verifier = MakeError({{"type", "verifier"}});
  EXPECT_EQ(verifier.ToString(),
            "InvalidArgument: reward.type: 'verifier' is scored by the solve-and-verify workflow");

  const Status not_string = MakeError({{"type", 3}});
  EXPECT_EQ(not_string.field(), "reward.type");
}

TEST(MakeRewardTest, BadOptionsNameTheField) {
  struct Case {
    json spec;
    std::string field;
  };
  const Case cases[] = {
      {{{"type", "math"}, {"options", "tolerance=1"}}, "reward.options"},
      {{{"options", json::array()}}, "reward.options"},
      {{{"type", "exact-match"}, {"options", {{"extract", 1}}}}, "reward.options.extract"},
      {{{"type", "digit-match"}, {"options", {{"extract", 1}}}}, "reward.options.extract"},
      {{{"type", "math"}, {"options", {{"tolerance", -0.5}}}}, "reward.options.tolerance"},
      {{{"type", "math"}, {"options", {{"extract", true}}}}, "reward.options.extract"},
      {{{"type", "code-exec"}, {"options", {{"timeoutSeconds", -1}}}},
       "reward.options.timeoutSeconds"},
      {{{"type", "math"}, {"tolerance", 1}}, "reward.tolerance"},  // Options belong in options.
      {json::array(), "reward"},
  };
  for (const Case& c : cases) {
    const Status s = MakeError(c.spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.spec.dump();
    EXPECT_EQ(s.field(), c.field) << c.spec.dump() << ": " << s.ToString();
  }
}

// A reward that does whatever the test sets up, to exercise ScoreSafely's guard.
class ScriptedReward final : public Reward {
 public:
  enum class Action { kScore, kThrowStd, kThrowInt };

  ScriptedReward(Action action, RewardOutcome outcome = {})
      : action_(action), outcome_(std::move(outcome)) {}

  std::string_view name() const override { return "scripted"; }
  RewardOutcome Score(const RewardInput&) const override {
    switch (action_) {
      case Action::kThrowStd:
        throw std::runtime_error("sandbox exploded");
      case Action::kThrowInt:
        throw 42;
      case Action::kScore:
        break;
    }
    return outcome_;
  }

 private:
  Action action_;
  RewardOutcome outcome_;
};

RewardOutcome ScoreScripted(const Reward& reward) {
  const json row = json::object();
  return ScoreSafely(reward, {.response = "r", .answer = "a", .row = &row});
}

TEST(ScoreSafelyTest, AnExceptionScoresZeroWithError) {
  const RewardOutcome std_error = ScoreScripted(ScriptedReward(ScriptedReward::Action::kThrowStd));
  EXPECT_EQ(std_error.score, 0);
  EXPECT_TRUE(std_error.error);
  EXPECT_EQ(std_error.detail, "sandbox exploded");

  const RewardOutcome other = ScoreScripted(ScriptedReward(ScriptedReward::Action::kThrowInt));
  EXPECT_EQ(other.score, 0);
  EXPECT_TRUE(other.error);
  EXPECT_FALSE(other.detail.empty());
}

TEST(ScoreSafelyTest, PassesAGoodOutcomeThrough) {
  const RewardOutcome out = ScoreScripted(ScriptedReward(
      ScriptedReward::Action::kScore, {.score = 0.75, .error = false, .detail = "3/4"}));
  EXPECT_EQ(out.score, 0.75);
  EXPECT_FALSE(out.error);
  EXPECT_EQ(out.detail, "3/4");

  const std::unique_ptr<Reward> exact = Make(json::object());
  ASSERT_NE(exact, nullptr);
  const json row = json::object();
  EXPECT_EQ(ScoreSafely(*exact, {.response = "\\boxed{a}", .answer = "A", .row = &row}).score, 1);
}

TEST(ScoreSafelyTest, AnErrorOrABadScoreIsZero) {
  const RewardOutcome failed = ScoreScripted(ScriptedReward(
      ScriptedReward::Action::kScore, {.score = 1, .error = true, .detail = "timeout"}));
  EXPECT_EQ(failed.score, 0);
  EXPECT_TRUE(failed.error);
  EXPECT_EQ(failed.detail, "timeout");

  for (double bad : {-0.5, 1.5, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    const RewardOutcome out = ScoreScripted(
        ScriptedReward(ScriptedReward::Action::kScore, {.score = bad, .detail = "x"}));
    EXPECT_EQ(out.score, 0) << bad;
    EXPECT_TRUE(out.error) << bad;
    EXPECT_NE(out.detail.find("scripted returned score"), std::string::npos) << out.detail;
  }
}

}  // namespace
}  // namespace sluice::rollout
