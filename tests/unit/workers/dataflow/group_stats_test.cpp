#include "workers/dataflow/algorithms/group_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace sluice::dataflow {
namespace {

Sample Make(std::string prompt, std::string policy, double reward) {
  Sample s;
  s.prompt_id = std::move(prompt);
  s.policy = std::move(policy);
  s.reward = reward;
  return s;
}

TEST(DataflowGroupStatsTest, MeanAndUnbiasedStd) {
  struct Case {
    std::vector<double> rewards;
    double mean;
    double std;
  };
  const Case cases[] = {
      // mean 0.5; Σ(r − 0.5)² = 4 × 0.25 = 1; std = sqrt(1 / 3).
      {{1, 0, 1, 0}, 0.5, 0.57735026918962573},
      // mean 40/8 = 5; Σ squares = 9+1+1+1+0+0+4+16 = 32; std = sqrt(32 / 7).
      {{2, 4, 4, 4, 5, 5, 7, 9}, 5.0, 2.1380899352993950},
      {{3}, 3.0, 1.0},                     // Singleton: std defined as 1.
      {{1, 1, 1}, 1.0, 0.0},               // All equal.
      {{-1, 1}, 0.0, 1.4142135623730951},  // Σ squares = 2; std = sqrt(2 / 1).
  };
  for (const Case& c : cases) {
    auto stats = ComputeGroupStats(c.rewards);
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->size, c.rewards.size());
    EXPECT_DOUBLE_EQ(stats->mean, c.mean);
    EXPECT_DOUBLE_EQ(stats->std, c.std);
  }
}

TEST(DataflowGroupStatsTest, RejectsEmptyAndNonFinite) {
  const std::vector<std::vector<double>> bad = {
      {},
      {1.0, std::numeric_limits<double>::quiet_NaN()},
      {std::numeric_limits<double>::infinity()},
  };
  for (const auto& rewards : bad) {
    auto stats = ComputeGroupStats(rewards);
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(stats.status().field(), "rewards");
  }
}

TEST(DataflowGroupStatsTest, StampsPerPromptAndPolicy) {
  std::vector<Sample> samples = {Make("a", "x", 1), Make("a", "y", 5), Make("b", "x", 2),
                                 Make("a", "x", 0), Make("b", "x", 4)};
  ASSERT_TRUE(StampGroupStats(samples, {}).ok());
  // (a, x): {1, 0} mean 0.5, std sqrt(0.5 / 1); (a, y): {5} singleton; (b, x): {2, 4} mean 3,
  // std sqrt(2 / 1).
  const double expected_mean[] = {0.5, 5, 3, 0.5, 3};
  const double expected_std[] = {std::sqrt(0.5), 1, std::sqrt(2.0), std::sqrt(0.5), std::sqrt(2.0)};
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_DOUBLE_EQ(*samples[i].group_mean, expected_mean[i]) << i;
    EXPECT_DOUBLE_EQ(*samples[i].group_std, expected_std[i]) << i;
    EXPECT_FALSE(samples[i].advantage.has_value());
  }
}

TEST(DataflowGroupStatsTest, Advantages) {
  struct Case {
    AdvantageMode mode;
    double epsilon;
    std::vector<double> rewards;
    std::vector<double> advantages;
  };
  const Case cases[] = {
      // {1, 0}: mean 0.5, std sqrt(0.5) = 0.70710678; ±0.5 / 0.70710678 = ±0.70710678.
      {AdvantageMode::kGrpo, 0.0, {1, 0}, {0.70710678118654757, -0.70710678118654757}},
      // Same with epsilon 0.29289321881345243: std + eps = 1, so ±0.5.
      {AdvantageMode::kGrpo, 1.0 - std::sqrt(0.5), {1, 0}, {0.5, -0.5}},
      {AdvantageMode::kMeanOnly, 1e-6, {1, 0, 0, 0}, {0.75, -0.25, -0.25, -0.25}},
      {AdvantageMode::kGrpo, 1e-6, {3}, {0.0}},          // Singleton: (3 − 3) / (1 + eps).
      {AdvantageMode::kGrpo, 1e-6, {2, 2}, {0.0, 0.0}},  // Zero std: 0 / eps.
  };
  for (const Case& c : cases) {
    std::vector<Sample> samples;
    for (double r : c.rewards) samples.push_back(Make("p", "x", r));
    ASSERT_TRUE(StampGroupStats(samples, {c.mode, c.epsilon}).ok());
    for (size_t i = 0; i < samples.size(); ++i) {
      ASSERT_TRUE(samples[i].advantage.has_value());
      EXPECT_NEAR(*samples[i].advantage, c.advantages[i], 1e-12) << i;
    }
  }
}

TEST(DataflowGroupStatsTest, NanRewardStampsNothing) {
  std::vector<Sample> samples = {Make("a", "x", 1), Make("b", "x", 0),
                                 Make("b", "x", std::numeric_limits<double>::quiet_NaN())};
  Status s = StampGroupStats(samples, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  for (const Sample& sample : samples) EXPECT_FALSE(sample.group_mean.has_value());
}

TEST(DataflowGroupStatsTest, EmptyInputIsOk) {
  std::vector<Sample> none;
  EXPECT_TRUE(StampGroupStats(none, {}).ok());
}

TEST(DataflowGroupStatsTest, BadOptions) {
  EXPECT_EQ(StampGroupStats({}, {AdvantageMode::kGrpo, -1.0}).field(), "epsilon");
  EXPECT_EQ(ParseAdvantageMode("grpo").value(), AdvantageMode::kGrpo);
  EXPECT_EQ(ParseAdvantageMode("mean-only").value(), AdvantageMode::kMeanOnly);
  EXPECT_EQ(ParseAdvantageMode("ppo").status().field(), "advantage");
}

TEST(DataflowGroupStatsTest, PartitionKeepsFirstAppearanceOrder) {
  std::vector<Sample> samples = {Make("b", "x", 1), Make("a", "x", 2), Make("b", "x", 3),
                                 Make("b", "y", 4)};
  auto groups = PartitionGroups(std::move(samples));
  ASSERT_EQ(groups.size(), 3U);
  ASSERT_EQ(groups[0].size(), 2U);
  EXPECT_EQ(groups[0][0].reward, 1);
  EXPECT_EQ(groups[0][1].reward, 3);
  EXPECT_EQ(groups[1][0].prompt_id, "a");
  EXPECT_EQ(groups[2][0].policy, "y");
}

}  // namespace
}  // namespace sluice::dataflow
