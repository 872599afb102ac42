#include "workers/rollout/rewards/exact_match.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::rollout {
namespace exact_match_test {

using nlohmann::json;

const json kRow = json::object();

RewardOutcome ScoreWith(const ExactMatchReward& reward, std::string_view response,
                        std::string_view answer) {
  return reward.Score({.response = response, .answer = answer, .row = &kRow});
}

TEST(ExactMatchRewardTest, DefaultsExtract) {
  Result<std::unique_ptr<ExactMatchReward>> made = ExactMatchReward::Create(json::object());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE((*made)->options().extract);
  EXPECT_EQ((*made)->name(), "exact-match");
}

TEST(ExactMatchRewardTest, ScoresTheExtractedNormalisedAnswer) {
  const ExactMatchReward reward(ExactMatchReward::Options{});
  struct Case {
    std::string response;
    std::string answer;
    double score;
  };
  const Case cases[] = {
      {"Let me think. \\boxed{Paris}", "paris", 1},
      {"The answer is  New   York.", "new york", 1},
      {"<answer> \"Blue\" </answer>", "blue", 1},
      {"  42  ", "42", 1},
      {"$42$", "42.", 1},
      {"\\boxed{41}", "42", 0},
      {"The answer is 4", "42", 0},
      {"42 apples", "42", 0},  // Exact means exact: no numeric reading.
      {"", "42", 0},
      // The reference is normalised too, but not extracted from.
      {"\\boxed{x}", "\\boxed{x}", 0},
  };
  for (const Case& c : cases) {
    const RewardOutcome out = ScoreWith(reward, c.response, c.answer);
    EXPECT_EQ(out.score, c.score) << c.response << " vs " << c.answer;
    EXPECT_FALSE(out.error);
  }
}

TEST(ExactMatchRewardTest, MismatchDetailQuotesBothSides) {
  const ExactMatchReward reward(ExactMatchReward::Options{});
  const RewardOutcome out = ScoreWith(reward, "\\boxed{Lyon}", "Paris");
  EXPECT_EQ(out.score, 0);
  EXPECT_EQ(out.detail, "answer \"lyon\" does not match \"paris\"");
}

TEST(ExactMatchRewardTest, ExtractOffComparesTheWholeResponse) {
  Result<std::unique_ptr<ExactMatchReward>> made =
      ExactMatchReward::Create(json{{"extract", false}});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_FALSE((*made)->options().extract);
  EXPECT_EQ(ScoreWith(**made, "The answer is 42", "42").score, 0);
  EXPECT_EQ(ScoreWith(**made, "\\boxed{42}", "42").score, 0);
  EXPECT_EQ(ScoreWith(**made, " 42. ", "42").score, 1);
  EXPECT_EQ(ScoreWith(**made, "The answer is 42", "the answer is 42").score, 1);
}

TEST(ExactMatchRewardTest, BadOptionsNameTheField) {
  const Status wrong_type = ExactMatchReward::Create(json{{"extract", "yes"}}).status();
  EXPECT_EQ(wrong_type.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong_type.field(), "reward.options.extract");
  EXPECT_EQ(wrong_type.ToString(),
            "InvalidArgument: reward.options.extract: must be a boolean, got string");

  const Status unknown = ExactMatchReward::Create(json{{"extrct", true}}).status();
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.field(), "reward.options.extrct");

  const Status not_object = ExactMatchReward::Create(json::array()).status();
  EXPECT_EQ(not_object.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(not_object.field(), "reward.options");
}

}  // namespace exact_match_test
}  // namespace sluice::rollout
