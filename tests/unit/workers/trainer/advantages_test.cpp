// Reward shaping, group-relative advantages, token rewards, GAE and batch advantage
// normalisation against hand-computed values.
#include "workers/trainer/advantages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace sluice::trainer {
namespace {

constexpr double kTol = 1e-12;

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "index " << i;
}

RewardShapingOptions Overlong() {
  RewardShapingOptions o;
  o.max_new_tokens = 100;
  o.overlong_buffer_tokens = 20;
  o.overlong_penalty_factor = 1.0;
  return o;
}

TEST(RewardShapingTest, OverlongPenaltyIsZeroUntilTheBufferThenLinear) {
  const RewardShapingOptions o = Overlong();
  ASSERT_TRUE(Validate(o).ok());
  EXPECT_EQ(OverlongPenalty(50, o), 0.0);            // Well under Lmax - Lov = 80.
  EXPECT_EQ(OverlongPenalty(80, o), 0.0);            // -(80 - 80) / 20 = 0.
  EXPECT_NEAR(OverlongPenalty(90, o), -0.5, kTol);   // -(90 - 80) / 20.
  EXPECT_NEAR(OverlongPenalty(100, o), -1.0, kTol);  // -f at exactly Lmax.
  EXPECT_NEAR(OverlongPenalty(110, o), -1.5, kTol);  // Keeps falling past Lmax.
  RewardShapingOptions half = o;
  half.overlong_penalty_factor = 0.5;
  EXPECT_NEAR(OverlongPenalty(90, half), -0.25, kTol);
  RewardShapingOptions off;
  EXPECT_EQ(OverlongPenalty(1000000, off), 0.0);
}

TEST(RewardShapingTest, PenaltyThenBiasScaleAndClip) {
  RewardShapingOptions o = Overlong();
  o.reward_bias = 0.5;
  o.reward_scaling = 2.0;
  // (0 - 1 + 0.5) * 2 = -1 (no clip).
  EXPECT_NEAR(ShapeReward(0.0, 100, o), -1.0, kTol);
  // (1 - 0.5 + 0.5) * 2 = 2.
  EXPECT_NEAR(ShapeReward(1.0, 90, o), 2.0, kTol);
  o.reward_clip = 1.5;
  EXPECT_NEAR(ShapeReward(1.0, 90, o), 1.5, kTol);
  EXPECT_NEAR(ShapeReward(-3.0, 0, o), -1.5, kTol);  // (-3 + 0.5) * 2 = -5 -> -1.5.
  EXPECT_NEAR(ShapeReward(0.25, 0, o), 1.5, kTol);   // (0.25 + 0.5) * 2 = 1.5 stays.
}

TEST(RewardShapingTest, ValidateNamesTheField) {
  RewardShapingOptions o = Overlong();
  o.overlong_buffer_tokens = 101;
  EXPECT_EQ(Validate(o).field(), "reward.overlong_buffer_tokens");
  o = Overlong();
  o.max_new_tokens = 0;
  EXPECT_EQ(Validate(o).field(), "reward.max_new_tokens");
  o = Overlong();
  o.reward_clip = -1;
  EXPECT_EQ(Validate(o).field(), "reward.reward_clip");
  o = Overlong();
  o.overlong_penalty_factor = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Validate(o).field(), "reward.overlong_penalty_factor");
}

TEST(GroupAdvantagesTest, GroupModeUsesTheUnbiasedStdAndZeroesFlatGroups) {
  // Group 7: {1, 0, 0, 1}: mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = sqrt(1/3).
  // Group 3: {2, 2, 2}: zero variance -> 0. Group 9: a singleton -> 0.
  const std::vector<double> r = {1, 2, 0, 2, 0, 5, 1, 2};
  const std::vector<int64_t> g = {7, 3, 7, 3, 7, 9, 7, 3};
  auto adv = GroupAdvantages(r, g, {});
  ASSERT_TRUE(adv.ok()) << adv.status().ToString();
  const double a = 0.5 / (std::sqrt(1.0 / 3.0) + 1e-6);  // 0.866024...
  ExpectNear(*adv, {a, 0, -a, 0, -a, 0, a, 0}, kTol);
  EXPECT_NEAR(a, 0.8660239, 1e-6);
  // Exactly zero, not a rounding residue.
  for (size_t i : {1u, 3u, 5u, 7u}) EXPECT_EQ((*adv)[i], 0.0);
}

TEST(GroupAdvantagesTest, RoundingDoesNotLeakSignalFromAFlatGroup) {
  // The mean of three 0.1s is not exactly 0.1 in binary; the group still gets exact zeros.
  const std::vector<double> r = {0.1, 0.1, 0.1};
  const std::vector<int64_t> g = {0, 0, 0};
  for (AdvantageMode m : {AdvantageMode::kGroup, AdvantageMode::kMeanOnly,
                          AdvantageMode::kLeaveOneOut, AdvantageMode::kBatch}) {
    auto adv = GroupAdvantages(r, g, {m, 1e-6});
    ASSERT_TRUE(adv.ok());
    for (double x : *adv) EXPECT_EQ(x, 0.0) << AdvantageModeName(m);
  }
}

TEST(GroupAdvantagesTest, MeanOnly) {
  auto adv = GroupAdvantages(std::vector<double>{1, 0, 3, 0, 0},
                             std::vector<int64_t>{0, 0, 1, 1, 1}, {AdvantageMode::kMeanOnly});
  ASSERT_TRUE(adv.ok());
  ExpectNear(*adv, {0.5, -0.5, 2, -1, -1}, kTol);  // Means 0.5 and 1.
}

TEST(GroupAdvantagesTest, LeaveOneOutComparesWithTheOthers) {
  // Group 0 {1, 0, 0}: 1 - mean(0, 0) = 1; 0 - mean(1, 0) = -0.5 twice.
  // Group 1 {4, 2}: 4 - 2 = 2, 2 - 4 = -2. Group 2 singleton -> 0.
  auto adv = GroupAdvantages(std::vector<double>{1, 0, 0, 4, 2, 9},
                             std::vector<int64_t>{0, 0, 0, 1, 1, 2}, {AdvantageMode::kLeaveOneOut});
  ASSERT_TRUE(adv.ok());
  ExpectNear(*adv, {1, -0.5, -0.5, 2, -2, 0}, kTol);
}

TEST(GroupAdvantagesTest, BatchModeIgnoresGroups) {
  // Mean 2, unbiased std sqrt((1 + 0 + 1) / 2) = 1.
  auto adv = GroupAdvantages(std::vector<double>{1, 2, 3}, std::vector<int64_t>{0, 1, 2},
                             {AdvantageMode::kBatch, 1e-6});
  ASSERT_TRUE(adv.ok());
  ExpectNear(*adv, {-1 / (1 + 1e-6), 0, 1 / (1 + 1e-6)}, kTol);
}

TEST(GroupAdvantagesTest, EmptyBatchAndErrors) {
  auto empty = GroupAdvantages({}, {}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(
      GroupAdvantages(std::vector<double>{1, 2}, std::vector<int64_t>{0}, {}).status().field(),
      "group_index");
  EXPECT_EQ(
      GroupAdvantages(std::vector<double>{1}, std::vector<int64_t>{0}, {AdvantageMode::kGroup, 0.0})
          .status()
          .field(),
      "advantage.eps");
  EXPECT_EQ(GroupAdvantages(std::vector<double>{std::nan("")}, std::vector<int64_t>{0}, {})
                .status()
                .field(),
            "rewards");
}

TEST(GroupAdvantagesTest, ModeNamesRoundTrip) {
  for (AdvantageMode m : {AdvantageMode::kGroup, AdvantageMode::kMeanOnly,
                          AdvantageMode::kLeaveOneOut, AdvantageMode::kBatch}) {
    auto parsed = ParseAdvantageMode(AdvantageModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(ParseAdvantageMode("grpo").status().field(), "advantage.mode");
}

TEST(TokenRewardsTest, KlOnMaskedTokensAndTheRewardOnTheLastOne) {
  const std::vector<float> mask = {0, 1, 1, 0};
  const std::vector<double> kl = {0.1, 0.2, 0.3, 0.4};
  auto r = TokenRewards(1.0, mask, kl, 0.5);
  ASSERT_TRUE(r.ok());
  ExpectNear(*r, {0, -0.1, 1 - 0.15, 0}, kTol);
  auto plain = TokenRewards(2.0, mask);
  ASSERT_TRUE(plain.ok());
  ExpectNear(*plain, {0, 0, 2, 0}, kTol);
  auto none = TokenRewards(2.0, std::vector<float>{0, 0});
  ASSERT_TRUE(none.ok());
  ExpectNear(*none, {0, 0}, kTol);
  EXPECT_EQ(TokenRewards(1.0, std::vector<float>{0, 0.5}).status().field(), "mask");
  EXPECT_EQ(TokenRewards(1.0, mask, std::vector<double>{1}).status().field(), "kl");
}

TEST(GaeTest, DiscountedThreeTokenExample) {
  // gamma 0.9, lambda 0.8 (gamma * lambda = 0.72), r = {0, 0, 1}, V = {0.5, 0.4, 0.3}:
  //   t=2: delta = 1 + 0.9 * 0 - 0.3 = 0.7;       A2 = 0.7
  //   t=1: delta = 0 + 0.9 * 0.3 - 0.4 = -0.13;   A1 = -0.13 + 0.72 * 0.7 = 0.374
  //   t=0: delta = 0 + 0.9 * 0.4 - 0.5 = -0.14;   A0 = -0.14 + 0.72 * 0.374 = 0.12928
  //   returns = A + V = {0.62928, 0.774, 1.0}
  auto g = Gae(std::vector<double>{0, 0, 1}, std::vector<double>{0.5, 0.4, 0.3},
               std::vector<float>{1, 1, 1}, {0.9, 0.8});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ExpectNear(g->advantages, {0.12928, 0.374, 0.7}, 1e-12);
  ExpectNear(g->returns, {0.62928, 0.774, 1.0}, 1e-12);
}

TEST(GaeTest, SkipsMaskedPositions) {
  // Token 1 (mask 0, e.g. a tool response) is skipped: its reward 5 and value 9 are ignored and
  // token 0 bootstraps from token 2 directly:
  //   t=2: A2 = 1 - 0.3 = 0.7, V_next = 0.3
  //   t=0: delta = 0 + 0.9 * 0.3 - 0.5 = -0.23;   A0 = -0.23 + 0.72 * 0.7 = 0.274
  auto g = Gae(std::vector<double>{0, 5, 1}, std::vector<double>{0.5, 9, 0.3},
               std::vector<float>{1, 0, 1}, {0.9, 0.8});
  ASSERT_TRUE(g.ok());
  ExpectNear(g->advantages, {0.274, 0, 0.7}, 1e-12);
  ExpectNear(g->returns, {0.774, 9, 1.0}, 1e-12);
}

TEST(GaeTest, UndiscountedWithoutCriticGivesEveryGeneratedTokenTheReward) {
  const std::vector<float> mask = {0, 0, 1, 1, 0, 1, 0};  // Prompt, 2 tokens, tool, 1 token, pad.
  auto r = TokenRewards(0.7, mask);
  ASSERT_TRUE(r.ok());
  auto g = Gae(*r, {}, mask, {1.0, 1.0});
  ASSERT_TRUE(g.ok());
  ExpectNear(g->advantages, {0, 0, 0.7, 0.7, 0, 0.7, 0}, kTol);
  ExpectNear(g->returns, g->advantages, kTol);
}

TEST(GaeTest, RejectsBadInputs) {
  const std::vector<double> r = {0, 1};
  const std::vector<float> m = {1, 1};
  EXPECT_EQ(Gae(r, std::vector<double>{0}, m, {}).status().field(), "values");
  EXPECT_EQ(Gae(r, {}, std::vector<float>{1}, {}).status().field(), "mask");
  EXPECT_EQ(Gae(r, {}, m, {1.1, 1.0}).status().field(), "gae.gamma");
  EXPECT_EQ(Gae(r, {}, m, {1.0, -0.1}).status().field(), "gae.lambda");
}

TEST(NormalizeAdvantagesTest, GlobalSumsGiveTheSameResultOnEveryRank) {
  // Rank A holds {1, 2, (100 masked out)}, rank B {3, 4}. Global: sum 10, sum_sq 30, count 4;
  // mean 2.5, unbiased var (30 - 10 * 2.5) / 3 = 5/3.
  std::vector<double> a = {1, 2, 100};
  std::vector<double> b = {3, 4};
  const std::vector<float> ma = {1, 1, 0};
  const std::vector<float> mb = {1, 1};
  auto sa = MaskedMoments(a, ma);
  auto sb = MaskedMoments(b, mb);
  ASSERT_TRUE(sa.ok() && sb.ok());
  MomentSums global = *sa;
  global.Merge(*sb);  // Stands in for the all-reduce.
  EXPECT_EQ(global.count, 4);
  EXPECT_EQ(global.sum, 10);
  EXPECT_EQ(global.sum_sq, 30);
  const double sd = std::sqrt(5.0 / 3.0);
  EXPECT_NEAR(global.UnbiasedStd(), sd, kTol);
  ASSERT_TRUE(NormalizeAdvantages(a, ma, global).ok());
  ASSERT_TRUE(NormalizeAdvantages(b, mb, global).ok());
  const double d = sd + 1e-6;
  ExpectNear(a, {-1.5 / d, -0.5 / d, 0}, kTol);
  ExpectNear(b, {0.5 / d, 1.5 / d}, kTol);
}

TEST(NormalizeAdvantagesTest, SingleTokenHasNoSpreadAndErrorsNameTheField) {
  std::vector<double> a = {3};
  const std::vector<float> m = {1};
  auto s = MaskedMoments(a, m);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->UnbiasedStd(), 0.0);
  ASSERT_TRUE(NormalizeAdvantages(a, m, *s).ok());
  EXPECT_EQ(a[0], 0.0);
  EXPECT_EQ(NormalizeAdvantages(a, std::vector<float>{2}, *s).field(), "mask");
  EXPECT_EQ(NormalizeAdvantages(a, m, *s, 0.0).field(), "eps");
  EXPECT_EQ(MaskedMoments(a, std::vector<float>{}).status().field(), "mask");
}

}  // namespace
}  // namespace sluice::trainer
