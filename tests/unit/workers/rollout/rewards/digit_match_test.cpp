#include "workers/rollout/rewards/digit_match.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sluice::rollout {
namespace {

using nlohmann::json;

const json kRow = json::object();

RewardOutcome ScoreWith(const DigitMatchReward& reward, std::string_view response,
                        std::string_view answer) {
  return reward.Score({.response = response, .answer = answer, .row = &kRow});
}

TEST(DigitMatchTest, CanonicalInteger) {
  struct Case {
    std::string text;
    std::optional<std::string> canonical;
  };
  const Case cases[] = {
      {"42", "42"},
      {"-42", "-42"},
      {"007", "7"},
      {"-007", "-7"},
      {"0", "0"},
      {"000", "0"},
      {"-0", "0"},
      {"", std::nullopt},
      {"-", std::nullopt},
      {"+42", std::nullopt},
      {"4 2", std::nullopt},
      {"1,000", std::nullopt},
      {"4.0", std::nullopt},
      {"--4", std::nullopt},
      {"4-", std::nullopt},
      {"abc", std::nullopt},
      {" 42", std::nullopt},  // Not trimmed: normalise first.
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CanonicalInteger(c.text), c.canonical) << "\"" << c.text << "\"";
  }
}

TEST(DigitMatchTest, ScoreCountsRightAlignedDigits) {
  struct Case {
    std::string answer;
    std::string reference;
    double score;
  };
  const Case cases[] = {
      {"42", "42", 1.0},        // Equal.
      {"42", "43", 0.5},        // Tens right, units wrong.
      {"42", "52", 0.5},        // Units right.
      {"142", "42", 2.0 / 3},   // An extra digit costs a position.
      {"42", "142", 2.0 / 3},   // So does a missing one.
      {"2", "1000", 0.0},       // Right-aligned: 2 faces the units 0.
      {"1000", "1", 0.0},       // Not left-aligned: the leading 1 does not count.
      {"1234", "4321", 0.0},    // The same digits, reversed.
      {"1239", "1234", 0.75},   // All but the units.
      {"007", "7", 1.0},        // Leading zeros dropped: the same integer.
      {"-0", "0", 1.0},         // So is -0.
      {"-42", "-42", 1.0},      // The sign is a position: 3/3.
      {"-42", "42", 2.0 / 3},   // Digits right, sign wrong.
      {"42", "-42", 2.0 / 3},   // Either way round.
      {"-43", "-42", 2.0 / 3},  // Sign and tens right.
      {"-5", "-15", 2.0 / 3},   // Sign and units of 3 positions.
      {"-5", "15", 0.5},        // Units of 2 positions ("-" vs "1" differ).
      {"", "42", 0.0},          // Not an integer: 0.
      {"abc", "42", 0.0},       // Nor is text,
      {"4.2", "42", 0.0},       // a decimal,
      {"-", "42", 0.0},         // or a bare sign.
      {"42", "abc", 0.0},       // Nor a reference that is not one.
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(DigitMatchScore(c.answer, c.reference), c.score)
        << "\"" << c.answer << "\" vs \"" << c.reference << "\"";
  }
  // Exactly 1 only for equal integers.
  EXPECT_EQ(DigitMatchScore("123456789", "123456789"), 1.0);
  EXPECT_LT(DigitMatchScore("123456789", "123456780"), 1.0);
}

TEST(DigitMatchRewardTest, DefaultsExtract) {
  Result<std::unique_ptr<DigitMatchReward>> made = DigitMatchReward::Create(json::object());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE((*made)->options().extract);
  EXPECT_EQ((*made)->name(), "digit-match");
}

TEST(DigitMatchRewardTest, ScoresTheExtractedNormalisedAnswer) {
  const DigitMatchReward reward(DigitMatchReward::Options{});
  struct Case {
    std::string response;
    std::string answer;
    double score;
  };
  const Case cases[] = {
      {"So 6 * 7 = \\boxed{42}", "42", 1.0},
      {"The answer is 43.", "42", 0.5},
      {"<answer> 142 </answer>", "42", 2.0 / 3},
      {"$-42$", "-42", 1.0},
      {"\\boxed{42}", " 42. ", 1.0},  // The reference is normalised too.
      {"42 apples", "42", 0.0},       // Not an integer.
      {"", "42", 0.0},
      {"\\boxed{x}", "42", 0.0},
  };
  for (const Case& c : cases) {
    const RewardOutcome out = ScoreWith(reward, c.response, c.answer);
    EXPECT_DOUBLE_EQ(out.score, c.score) << c.response << " vs " << c.answer;
    EXPECT_FALSE(out.error) << c.response;
  }
}

TEST(DigitMatchRewardTest, DetailSaysWhatWasCompared) {
  const DigitMatchReward reward(DigitMatchReward::Options{});
  EXPECT_EQ(ScoreWith(reward, "\\boxed{142}", "42").detail,
            "answer \"142\" vs \"42\": 2/3 positions match");
  EXPECT_EQ(ScoreWith(reward, "\\boxed{Lyon}", "42").detail, "answer \"lyon\" is not an integer");
}

TEST(DigitMatchRewardTest, AReferenceThatIsNotAnIntegerIsAnError) {
  const DigitMatchReward reward(DigitMatchReward::Options{});
  const RewardOutcome out = ScoreWith(reward, "\\boxed{42}", "forty-two");
  EXPECT_EQ(out.score, 0);
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.detail, "reference \"forty-two\" is not an integer");
}

TEST(DigitMatchRewardTest, ExtractOffScoresTheWholeResponse) {
  Result<std::unique_ptr<DigitMatchReward>> made =
      DigitMatchReward::Create(json{{"extract", false}});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_FALSE((*made)->options().extract);
  EXPECT_EQ(ScoreWith(**made, "The answer is 42", "42").score, 0);
  EXPECT_EQ(ScoreWith(**made, "\\boxed{42}", "42").score, 0);
  EXPECT_EQ(ScoreWith(**made, " 42. ", "42").score, 1);
  EXPECT_DOUBLE_EQ(ScoreWith(**made, "43", "42").score, 0.5);
}

TEST(DigitMatchRewardTest, BadOptionsNameTheField) {
  const Status wrong_type = DigitMatchReward::Create(json{{"extract", "yes"}}).status();
  EXPECT_EQ(wrong_type.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong_type.field(), "reward.options.extract");

  const Status unknown = DigitMatchReward::Create(json{{"tolerance", 1}}).status();
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.field(), "reward.options.tolerance");

  const Status not_object = DigitMatchReward::Create(json::array()).status();
  EXPECT_EQ(not_object.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(not_object.field(), "reward.options");
}

}  // namespace
}  // namespace sluice::rollout
