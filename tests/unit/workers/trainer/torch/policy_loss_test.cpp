// The actor and critic losses against hand-computed values on tiny tensors: every clipping
// branch, dual clip, GSPO, the M2PO search, KL estimators, entropy bonus, TIS, the aggregation
// modes (and their micro-batch additivity), SFT, the value loss; plus finite-difference checks of
// the gradients, directly w.r.t. logp and through a tiny linear model.
#include "workers/trainer/torch/policy_loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace sluice::trainer {
namespace {

constexpr double kTol = 1e-12;

torch::Tensor D(std::vector<double> v) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64));
}
torch::Tensor I(std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64); }
torch::Tensor Leaf(std::vector<double> v) { return D(std::move(v)).requires_grad_(true); }

std::vector<double> Values(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat64).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

void ExpectNear(const torch::Tensor& got, const std::vector<double>& want, double tol) {
  const std::vector<double> g = Values(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "index " << i;
}

// One sequence, all tokens masked, old_logp = -1 and logp = -1 + log(ratio).
PolicyLossInputs OneSequence(const std::vector<double>& ratios, const std::vector<double>& adv) {
  std::vector<double> logp;
  for (double r : ratios) logp.push_back(-1.0 + std::log(r));
  const int64_t n = static_cast<int64_t>(ratios.size());
  PolicyLossInputs in;
  in.logp = Leaf(logp);
  in.old_logp = torch::full({n}, -1.0, torch::kFloat64);
  in.advantages = D(adv);
  in.mask = torch::ones({n}, torch::kFloat64);
  in.seq_index = torch::zeros({n}, torch::kInt64);
  in.num_sequences = 1;
  return in;
}

LossNormaliser Tokens(double n) {
  LossNormaliser norm;
  norm.tokens = n;
  return norm;
}

PolicyLossResult ComputeLoss(const PolicyLossInputs& in, const PolicyLossOptions& o,
                             const LossNormaliser& norm) {
  auto r = PolicyLoss(in, o, norm);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {torch::zeros({}, torch::kFloat64), {}};
  return *r;
}

TEST(PolicyLossTest, PpoClipTakesEachBranch) {
  // clip [0.8, 1.2], token-mean over 5 tokens:
  //   t0 A=+1 rho=1.5: max(-1.5, -1.2) = -1.2, clipped, no gradient
  //   t1 A=-1 rho=0.5: max( 0.5,  0.8) =  0.8, clipped, no gradient
  //   t2 A=+2 rho=1.1: inside, -2.2, d/dlogp = -A rho = -2.2
  //   t3 A=-1 rho=1.5: max( 1.5,  1.2) =  1.5, unclipped (the pessimistic side), d = 1.5
  //   t4 A=+1 rho=0.5: max(-0.5, -0.8) = -0.5, unclipped, d = -0.5
  // loss = (-1.2 + 0.8 - 2.2 + 1.5 - 0.5) / 5 = -0.32
  PolicyLossInputs in = OneSequence({1.5, 0.5, 1.1, 1.5, 0.5}, {1, -1, 2, -1, 1});
  const PolicyLossResult r = ComputeLoss(in, {}, Tokens(5));
  EXPECT_NEAR(r.loss.item<double>(), -0.32, kTol);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {0, 0, -2.2 / 5, 1.5 / 5, -0.5 / 5}, kTol);
  EXPECT_EQ(r.stats.tokens, 5);
  EXPECT_EQ(r.stats.clipped_tokens, 2);
  EXPECT_NEAR(r.stats.ClipFraction(), 0.4, kTol);
  EXPECT_NEAR(r.stats.RatioMean(), 5.1 / 5, kTol);
  EXPECT_NEAR(r.stats.ratio_max, 1.5, kTol);
  EXPECT_NEAR(r.stats.ApproxKl(), -(2 * std::log(1.5) + 2 * std::log(0.5) + std::log(1.1)) / 5,
              kTol);
  EXPECT_EQ(r.stats.dual_clipped_tokens, 0);
  EXPECT_EQ(r.stats.tis_weight_sum, 0);
}

TEST(PolicyLossTest, ClipHigherBoundsAreRatios) {
  // With [0.8, 1.28] the A>0 token at rho 1.25 is inside and keeps its gradient.
  PolicyLossInputs in = OneSequence({1.25, 1.3}, {1, 1});
  PolicyLossOptions o;
  o.clip_high = 1.28;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
  EXPECT_NEAR(r.loss.item<double>(), (-1.25 - 1.28) / 2, kTol);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {-1.25 / 2, 0}, kTol);
  EXPECT_EQ(r.stats.clipped_tokens, 1);
}

TEST(PolicyLossTest, DualClipCapsNegativeAdvantageTokens) {
  // c = 3, clip [0.8, 1.2]:
  //   t0 A=-1 rho=4: max(4, 1.2) = 4 > 3|A| = 3 -> 3, no gradient (dual-clipped)
  //   t1 A=-2 rho=2: max(4, 2.4) = 4 < 6        -> 4, d = 2 * 2 = 4
  //   t2 A=+1 rho=4: max(-4, -1.2) = -1.2 (clipped); the cap 3 never bites for A > 0
  // loss = (3 + 4 - 1.2) / 3
  PolicyLossInputs in = OneSequence({4, 2, 4}, {-1, -2, 1});
  PolicyLossOptions o;
  o.dual_clip = 3;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(3));
  EXPECT_NEAR(r.loss.item<double>(), 5.8 / 3, kTol);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {0, 4.0 / 3, 0}, kTol);
  EXPECT_EQ(r.stats.dual_clipped_tokens, 1);
  EXPECT_EQ(r.stats.clipped_tokens, 1);
}

TEST(PolicyLossTest, GspoUsesTheSequenceRatioAndMeanAdvantage) {
  // Seq 0: log-ratios {0.2, -0.1, (0.5 masked out)} -> mean 0.05, s0 = e^0.05 = 1.051271;
  //        advantages {1, 3, (100 masked out)} -> 2; inside [0.8, 1.2]: pg = -2 * s0 per token,
  //        gradient of each token -2 * s0 / N (straight-through: s0, not s0 / |b|).
  // Seq 1: log-ratios {0.4, 0.6} -> s1 = e^0.5 = 1.648721 > 1.2, advantage 1: clipped, -1.2 each.
  // token-mean over N = 4: loss = (2 * -2 * s0 + 2 * -1.2) / 4.
  PolicyLossInputs in;
  in.old_logp = D({-1, -1, -1, -2, -2});
  in.logp = Leaf({-0.8, -1.1, -0.5, -1.6, -1.4});
  in.advantages = D({1, 3, 100, 1, 1});
  in.mask = D({1, 1, 0, 1, 1});
  in.seq_index = I({0, 0, 0, 1, 1});
  in.num_sequences = 2;
  PolicyLossOptions o;
  o.type = PolicyLossType::kGspo;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(4));
  const double s0 = std::exp(0.05);
  EXPECT_NEAR(r.loss.item<double>(), (-4 * s0 - 2.4) / 4, 1e-12);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {-2 * s0 / 4, -2 * s0 / 4, 0, 0, 0}, 1e-12);
  EXPECT_EQ(r.stats.clipped_tokens, 2);
  EXPECT_NEAR(r.stats.ratio_sum, 2 * s0 + 2 * std::exp(0.5), 1e-12);
  EXPECT_NEAR(r.stats.ratio_max, std::exp(0.5), 1e-12);
}

TEST(M2poRangeTest, BudgetHeldMeansNoClipping) {
  const std::vector<double> m2 = {0.0025, 0.01};  // Mean 0.00625 <= 0.01.
  const M2poClipRange r = M2poRange(m2, 0.01);
  EXPECT_FALSE(r.clipping);
  EXPECT_EQ(r.ratio_low, 0.05);
  EXPECT_EQ(r.ratio_high, 21.0);
  EXPECT_NEAR(r.mean_m2, 0.00625, kTol);
  const M2poClipRange none = M2poRange({}, 0.01);
  EXPECT_FALSE(none.clipping);
  EXPECT_EQ(none.mean_m2, 0.0);
}

TEST(M2poRangeTest, DropsTheLargestUntilTheRestFitsTheBudget) {
  // Sorted descending {0.25, 0.09, 0.0144, 0.0025}, threshold 0.02:
  //   k=0: mean 0.3569 / 4 = 0.0892 >= 0.02
  //   k=1: mean 0.1069 / 3 = 0.0356 >= 0.02
  //   k=2: mean 0.0169 / 2 = 0.00845 < 0.02  -> tau = sqrt(0.0144) = 0.12
  //   bounds [e^-0.12, e^0.12] = [0.886920, 1.127497]
  const std::vector<double> m2 = {0.0144, 0.25, 0.0025, 0.09};  // Any order.
  const M2poClipRange r = M2poRange(m2, 0.02);
  EXPECT_TRUE(r.clipping);
  EXPECT_NEAR(r.ratio_low, std::exp(-0.12), 1e-12);
  EXPECT_NEAR(r.ratio_high, std::exp(0.12), 1e-12);
  EXPECT_NEAR(r.ratio_low, 0.886920437, 1e-9);
  EXPECT_NEAR(r.mean_m2, 0.3569 / 4, kTol);
}

TEST(M2poRangeTest, NoSuffixFitsCutsAtTheLastAndCapsApply) {
  // {0.09, 0.04}, threshold 0.01: even {0.04} alone is over, so k = n - 1 = 1, tau = 0.2.
  const M2poClipRange r = M2poRange(std::vector<double>{0.04, 0.09}, 0.01);
  EXPECT_NEAR(r.ratio_low, std::exp(-0.2), 1e-12);
  EXPECT_NEAR(r.ratio_high, std::exp(0.2), 1e-12);
  // tau = 10: e^-10 is under the 0.05 floor, e^10 over the 21 ceiling.
  const M2poClipRange capped = M2poRange(std::vector<double>{100, 100}, 0.01);
  EXPECT_TRUE(capped.clipping);
  EXPECT_EQ(capped.ratio_low, 0.05);
  EXPECT_EQ(capped.ratio_high, 21.0);
}

TEST(PolicyLossTest, M2poWithinBudgetReplacesTheClipRangeWithNoClip) {
  // Violating tokens: t0 (A>0, log-ratio 0.05, m2 0.0025) and t1 (A<0, log-ratio -0.1, m2 0.01);
  // t2 (A>0, rho<1) is not. Mean m2 0.00625 <= 0.01: bounds [0.05, 21], so even the tight
  // configured clip [0.99, 1.01] is replaced and nothing is clipped.
  PolicyLossInputs in = OneSequence({std::exp(0.05), std::exp(-0.1), std::exp(-0.3)}, {1, -1, 1});
  PolicyLossOptions o;
  o.clip_low = 0.99;
  o.clip_high = 1.01;
  o.m2po_threshold = 0.01;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(3));
  EXPECT_NEAR(r.loss.item<double>(), (-std::exp(0.05) + std::exp(-0.1) - std::exp(-0.3)) / 3,
              1e-12);
  EXPECT_EQ(r.stats.clipped_tokens, 0);
  EXPECT_EQ(r.stats.m2po_micro_batches, 1);
  EXPECT_EQ(r.stats.M2poRatioLowMean(), 0.05);
  EXPECT_EQ(r.stats.M2poRatioHighMean(), 21.0);
  EXPECT_EQ(r.stats.m2po_violating_tokens, 2);
  EXPECT_NEAR(r.stats.M2poMeanM2(), 0.00625, 1e-12);
}

TEST(PolicyLossTest, M2poOverBudgetClipsTheLargestDeviations) {
  // The M2poRangeTest example as tokens (all A = +1, rho > 1): tau = 0.12. Tokens at
  // log-ratio 0.5 and 0.3 are beyond e^0.12 and clipped to it (no gradient); 0.05 is inside; the
  // 0.12 token sits on the bound (its loss is the same either way). A fifth token (A = -1,
  // rho = e^0.3 > 1) does not violate and is beyond the bound on the pessimistic side: kept.
  const double hi = std::exp(0.12);
  PolicyLossInputs in =
      OneSequence({std::exp(0.5), std::exp(0.3), std::exp(0.12), std::exp(0.05), std::exp(0.3)},
                  {1, 1, 1, 1, -1});
  PolicyLossOptions o;
  o.m2po_threshold = 0.02;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(5));
  EXPECT_NEAR(r.loss.item<double>(), (-hi - hi - hi - std::exp(0.05) + std::exp(0.3)) / 5, 1e-12);
  r.loss.backward();
  const std::vector<double> g = Values(in.logp.grad());
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[1], 0.0);
  EXPECT_NEAR(g[3], -std::exp(0.05) / 5, 1e-12);
  EXPECT_NEAR(g[4], std::exp(0.3) / 5, 1e-12);
  EXPECT_GE(r.stats.clipped_tokens, 2);  // The boundary token may round either way.
  EXPECT_LE(r.stats.clipped_tokens, 3);
  EXPECT_NEAR(r.stats.M2poRatioHighMean(), hi, 1e-12);
  EXPECT_NEAR(r.stats.M2poRatioLowMean(), 1 / hi, 1e-12);
  EXPECT_EQ(r.stats.m2po_violating_tokens, 4);
}

TEST(PolicyLossTest, KlEstimators) {
  // A = 0 so only the KL term is left; d = logp - ref.
  //   d = +0.5: k1 0.5, k2 0.125, k3 e^-0.5 + 0.5 - 1 = 0.1065307
  //   d = -0.5: k1 -0.5, k2 0.125, k3 e^0.5 - 0.5 - 1 = 0.1487213
  // Gradients w.r.t. logp: k1 1, k2 d, k3 1 - e^-d.
  struct Case {
    KlEstimator est;
    double pos, neg, gpos, gneg;
  };
  const Case cases[] = {
      {KlEstimator::kK1, 0.5, -0.5, 1, 1},
      {KlEstimator::kK2, 0.125, 0.125, 0.5, -0.5},
      {KlEstimator::kK3, std::exp(-0.5) - 0.5, std::exp(0.5) - 1.5, 1 - std::exp(-0.5),
       1 - std::exp(0.5)},
  };
  for (const Case& c : cases) {
    PolicyLossInputs in = OneSequence({1, 1}, {0, 0});
    in.ref_logp = D({-1.5, -0.5});  // logp = -1.
    PolicyLossOptions o;
    o.kl_coef = 2.0;
    o.kl_estimator = c.est;
    const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
    EXPECT_NEAR(r.loss.item<double>(), 2.0 * (c.pos + c.neg) / 2, 1e-12) << KlEstimatorName(c.est);
    EXPECT_NEAR(r.stats.kl_sum, c.pos + c.neg, 1e-12);
    EXPECT_NEAR(r.stats.KlMean(), (c.pos + c.neg) / 2, 1e-12);
    r.loss.backward();
    ExpectNear(in.logp.grad(), {c.gpos, c.gneg}, 1e-12);
  }
  EXPECT_NEAR(std::exp(-0.5) - 0.5, 0.1065307, 1e-7);
}

TEST(PolicyLossTest, KlEstimateIsClamped) {
  // d = 20: k2 = 200 -> 10; d = -20: k3 = e^20 - 21 -> 10. Clamped tokens pass no gradient.
  PolicyLossInputs in = OneSequence({1, 1}, {0, 0});
  in.ref_logp = D({-21, 19});
  PolicyLossOptions o;
  o.kl_coef = 1.0;
  o.kl_estimator = KlEstimator::kK2;
  EXPECT_NEAR(ComputeLoss(in, o, Tokens(2)).loss.item<double>(), 10.0, 1e-12);  // (10 + 10) / 2.
  o.kl_estimator = KlEstimator::kK3;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
  // k3(20) = e^-20 + 19 -> 10; k3(-20) -> 10.
  EXPECT_NEAR(r.loss.item<double>(), 10.0, 1e-12);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {0, 0}, 0);
}

TEST(PolicyLossTest, EntropyBonus) {
  // A = 0; entropy {0.5, 1.5}, coef 0.1: loss = -0.1 * (0.5 + 1.5) / 2 = -0.1.
  PolicyLossInputs in = OneSequence({1, 1}, {0, 0});
  in.entropy = Leaf({0.5, 1.5});
  PolicyLossOptions o;
  o.entropy_coef = 0.1;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
  EXPECT_NEAR(r.loss.item<double>(), -0.1, 1e-12);
  EXPECT_NEAR(r.stats.EntropyMean(), 1.0, 1e-12);
  r.loss.backward();
  ExpectNear(in.entropy.grad(), {-0.05, -0.05}, 1e-12);
}

TEST(PolicyLossTest, TruncatedImportanceWeights) {
  // old - behaviour = {log 2, log 0.5}, cap 1.5: w = {1.5, 0.5} (detached). A = 1, rho = 1:
  // pg = {-1.5, -0.5}, loss -1, d/dlogp = -A rho w / 2 = {-0.75, -0.25}.
  PolicyLossInputs in = OneSequence({1, 1}, {1, 1});
  in.behaviour_logp = D({-1 - std::log(2.0), -1 - std::log(0.5)});
  PolicyLossOptions o;
  o.tis_cap = 1.5;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
  EXPECT_NEAR(r.loss.item<double>(), -1.0, 1e-12);
  EXPECT_NEAR(r.stats.TisWeightMean(), 1.0, 1e-12);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {-0.75, -0.25}, 1e-12);
  // Off: behaviour_logp is not even needed.
  PolicyLossInputs plain = OneSequence({1, 1}, {1, 1});
  EXPECT_NEAR(ComputeLoss(plain, {}, Tokens(2)).loss.item<double>(), -1.0, 1e-12);
}

TEST(PolicyLossTest, SftIsNegativeLogLikelihoodAndIgnoresPadding) {
  // Token 1 is padding with logp -inf: it must not turn the loss or the gradient into NaN.
  PolicyLossInputs in;
  in.logp = Leaf({-1.0, -std::numeric_limits<double>::infinity(), -3.0});
  in.mask = D({1, 0, 1});
  PolicyLossOptions o;
  o.type = PolicyLossType::kSft;
  const PolicyLossResult r = ComputeLoss(in, o, Tokens(2));
  EXPECT_NEAR(r.loss.item<double>(), 2.0, 1e-12);
  r.loss.backward();
  ExpectNear(in.logp.grad(), {-0.5, 0, -0.5}, 0);
  EXPECT_EQ(r.stats.tokens, 2);
}

// SFT on three sequences of 2, 3 and 1 loss tokens (each after one prompt token):
// token sums 3, 3, 3.
struct SftBatch {
  torch::Tensor logp = D({0, -1, -2, 0, -0.5, -1.5, -1, 0, -3});
  torch::Tensor mask = D({0, 1, 1, 0, 1, 1, 1, 0, 1});
  torch::Tensor seq = I({0, 0, 0, 1, 1, 1, 1, 2, 2});
};

TEST(PolicyLossTest, AggregationModes) {
  SftBatch b;
  PolicyLossInputs in;
  in.logp = b.logp;
  in.mask = b.mask;
  in.seq_index = b.seq;
  in.num_sequences = 3;
  PolicyLossOptions o;
  o.type = PolicyLossType::kSft;
  LossNormaliser norm;
  norm.tokens = 6;
  norm.sequences = 3;
  norm.sequence_tokens = D({2, 3, 1});
  o.aggregation = LossAggregation::kTokenMean;
  EXPECT_NEAR(ComputeLoss(in, o, norm).loss.item<double>(), 9.0 / 6, 1e-12);
  o.aggregation = LossAggregation::kSeqMeanTokenSum;
  EXPECT_NEAR(ComputeLoss(in, o, norm).loss.item<double>(), 9.0 / 3, 1e-12);
  o.aggregation = LossAggregation::kSeqMeanTokenMean;
  // Per-sequence means 1.5, 1, 3.
  EXPECT_NEAR(ComputeLoss(in, o, norm).loss.item<double>(), (1.5 + 1 + 3) / 3, 1e-12);
}

// A PPO batch of three sequences (1 prompt token + 2, 3, 1 loss tokens) with clipping, dual
// clip, TIS, KL and entropy all active, so every per-token term is exercised.
struct PpoBatch {
  std::vector<double> logp = {-2, -0.7, -1.9, -3, -0.2, -1.1, -2.6, -1, -0.4};
  // Ratios (masked): e^0.3 (A>0, clipped high), e^-0.4 (A<0, clipped low), e^-0.1 (inside),
  // e^1.3 = 3.67 (A<0, over the dual clip 3), e^-1.4 (A<0, clipped low), e^0.1 (inside).
  std::vector<double> old = {-2, -1.0, -1.5, -3, -0.1, -2.4, -1.2, -1, -0.5};
  // TIS weights e^(old - behaviour): e^0.2, 1, e^0.2, e^-0.8, e^0.8 = 2.23 -> cap 2, 1.
  std::vector<double> behaviour = {-2, -1.2, -1.5, -3, -0.3, -1.6, -2.0, -1, -0.5};
  std::vector<double> ref = {-2, -0.9, -1.7, -3, -0.4, -1.3, -1.9, -1, -0.6};
  std::vector<double> adv = {0, 1.0, -0.5, 0, 2.0, -1.5, -1.0, 0, 0.7};
  std::vector<double> entropy = {0, 0.3, 0.9, 0, 1.2, 0.4, 0.8, 0, 0.5};
  std::vector<double> mask = {0, 1, 1, 0, 1, 1, 1, 0, 1};
  std::vector<int64_t> seq = {0, 0, 0, 1, 1, 1, 1, 2, 2};

  static PolicyLossOptions Options(LossAggregation a) {
    PolicyLossOptions o;
    o.clip_high = 1.28;
    o.dual_clip = 3;
    o.tis_cap = 2;
    o.kl_coef = 0.1;
    o.entropy_coef = 0.01;
    o.aggregation = a;
    return o;
  }

  // Tokens [begin, end) as one micro-batch, its sequence ids made local (0 .. B-1) and its
  // sequence_tokens the global counts {2, 3, 1} of the sequences it touches.
  PolicyLossInputs Slice(size_t begin, size_t end, const torch::Tensor& logp_leaf) const {
    auto sub = [&](const std::vector<double>& v) {
      return D(std::vector<double>(v.begin() + begin, v.begin() + end));
    };
    PolicyLossInputs in;
    in.logp = logp_leaf;
    in.old_logp = sub(old);
    in.behaviour_logp = sub(behaviour);
    in.ref_logp = sub(ref);
    in.advantages = sub(adv);
    in.entropy = sub(entropy);
    in.mask = sub(mask);
    std::vector<int64_t> local;
    for (size_t i = begin; i < end; ++i) local.push_back(seq[i] - seq[begin]);
    in.seq_index = I(local);
    in.num_sequences = local.back() + 1;
    return in;
  }
  LossNormaliser Norm(size_t begin, size_t end) const {
    const std::vector<double> counts = {2, 3, 1};
    LossNormaliser n;
    n.tokens = 6;
    n.sequences = 3;
    n.sequence_tokens =
        D(std::vector<double>(counts.begin() + seq[begin], counts.begin() + seq[end - 1] + 1));
    return n;
  }
};

TEST(PolicyLossTest, MicroBatchLossesWithGlobalNormalisersSumToTheWholeBatch) {
  // Split inside sequence 1 (it spans both micro-batches) to show per-sequence counts must be
  // global for seq-mean-token-mean.
  const PpoBatch b;
  for (LossAggregation a : {LossAggregation::kTokenMean, LossAggregation::kSeqMeanTokenSum,
                            LossAggregation::kSeqMeanTokenMean}) {
    const PolicyLossOptions o = PpoBatch::Options(a);
    const torch::Tensor whole_logp = Leaf(b.logp);
    const PolicyLossResult whole = ComputeLoss(b.Slice(0, 9, whole_logp), o, b.Norm(0, 9));
    whole.loss.backward();

    const torch::Tensor logp_a = Leaf({b.logp.begin(), b.logp.begin() + 5});
    const torch::Tensor logp_b = Leaf({b.logp.begin() + 5, b.logp.end()});
    PolicyLossResult ra = ComputeLoss(b.Slice(0, 5, logp_a), o, b.Norm(0, 5));
    PolicyLossResult rb = ComputeLoss(b.Slice(5, 9, logp_b), o, b.Norm(5, 9));
    (ra.loss + rb.loss).backward();
    EXPECT_NEAR((ra.loss + rb.loss).item<double>(), whole.loss.item<double>(), 1e-12)
        << LossAggregationName(a);
    const std::vector<double> ga = Values(logp_a.grad());
    const std::vector<double> gb = Values(logp_b.grad());
    std::vector<double> split(ga);
    split.insert(split.end(), gb.begin(), gb.end());
    ExpectNear(whole_logp.grad(), split, 1e-12);

    PolicyLossStats merged = ra.stats;
    merged.Merge(rb.stats);
    EXPECT_EQ(merged.tokens, whole.stats.tokens);
    EXPECT_EQ(merged.clipped_tokens, whole.stats.clipped_tokens);
    EXPECT_NEAR(merged.ratio_sum, whole.stats.ratio_sum, 1e-12);
    EXPECT_NEAR(merged.ratio_max, whole.stats.ratio_max, 1e-12);
    EXPECT_NEAR(merged.kl_sum, whole.stats.kl_sum, 1e-12);
    EXPECT_NEAR(merged.tis_weight_sum, whole.stats.tis_weight_sum, 1e-12);
  }
  // The whole batch exercises clipping, dual clip and the TIS cap (else the test proves less).
  const PolicyLossResult r = ComputeLoss(
      b.Slice(0, 9, Leaf(b.logp)), PpoBatch::Options(LossAggregation::kTokenMean), b.Norm(0, 9));
  EXPECT_EQ(r.stats.clipped_tokens, 3);
  EXPECT_EQ(r.stats.dual_clipped_tokens, 1);
  EXPECT_NEAR(r.stats.tis_weight_sum, 2 * std::exp(0.2) + std::exp(-0.8) + 4, 1e-12);
}

// Central finite differences of f at x (double), one coordinate at a time.
std::vector<double> NumericGradient(const std::function<double(const torch::Tensor&)>& f,
                                    const torch::Tensor& x, double h = 1e-6) {
  std::vector<double> g;
  const torch::Tensor base = x.detach().clone();
  for (int64_t i = 0; i < base.numel(); ++i) {
    torch::Tensor up = base.clone();
    torch::Tensor down = base.clone();
    up.view(-1)[i] += h;
    down.view(-1)[i] -= h;
    g.push_back((f(up) - f(down)) / (2 * h));
  }
  return g;
}

TEST(PolicyLossGradientTest, PpoLossMatchesFiniteDifferences) {
  // All terms on; no ratio sits on a clip boundary, so the loss is smooth around this point.
  const PpoBatch b;
  for (LossAggregation a : {LossAggregation::kTokenMean, LossAggregation::kSeqMeanTokenMean}) {
    const PolicyLossOptions o = PpoBatch::Options(a);
    auto loss_at = [&](const torch::Tensor& logp) {
      return ComputeLoss(b.Slice(0, 9, logp), o, b.Norm(0, 9)).loss.item<double>();
    };
    const torch::Tensor logp = Leaf(b.logp);
    ComputeLoss(b.Slice(0, 9, logp), o, b.Norm(0, 9)).loss.backward();
    ExpectNear(logp.grad(), NumericGradient(loss_at, logp), 1e-8);
  }
}

TEST(PolicyLossGradientTest, GspoStraightThroughMatchesTheSequenceObjective) {
  // With one advantage per sequence the token form's gradient (s_b per token) equals the true
  // gradient of the sequence objective (d s_b / d logp_t = s_b / |b|, summed over |b| tokens).
  const PpoBatch b;
  PolicyLossOptions o;
  o.type = PolicyLossType::kGspo;
  o.clip_high = 1.28;
  auto loss_at = [&](const torch::Tensor& logp) {
    return ComputeLoss(b.Slice(0, 9, logp), o, b.Norm(0, 9)).loss.item<double>();
  };
  const torch::Tensor logp = Leaf(b.logp);
  ComputeLoss(b.Slice(0, 9, logp), o, b.Norm(0, 9)).loss.backward();
  ExpectNear(logp.grad(), NumericGradient(loss_at, logp), 1e-8);
}

TEST(PolicyLossGradientTest, ThroughATinyLinearModel) {
  // logits = x W^T (T = 5 tokens, d = 3 features, vocab 4), logp_t = log_softmax(logits_t)[y_t].
  // The autograd gradient of the PPO loss w.r.t. W matches finite differences on W.
  torch::manual_seed(7);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor x = torch::randn({5, 3}, f64);
  const torch::Tensor y = I({0, 3, 1, 2, 3});
  const torch::Tensor w0 = 0.5 * torch::randn({4, 3}, f64);
  auto logp_of = [&](const torch::Tensor& w) {
    return torch::log_softmax(torch::matmul(x, w.t()), 1).gather(1, y.unsqueeze(1)).squeeze(1);
  };
  PolicyLossInputs in;
  // The old policy is W0 perturbed slightly, so ratios differ from 1 but stay inside the clip.
  in.old_logp = logp_of(w0 + 0.05 * torch::randn({4, 3}, f64)).detach();
  in.advantages = D({1.0, -0.5, 0.8, -1.2, 0.3});
  in.mask = D({1, 1, 0, 1, 1});
  in.seq_index = I({0, 0, 0, 1, 1});
  in.num_sequences = 2;
  in.ref_logp = logp_of(w0 + 0.1 * torch::randn({4, 3}, f64)).detach();
  PolicyLossOptions o;
  o.kl_coef = 0.05;
  o.aggregation = LossAggregation::kSeqMeanTokenMean;
  LossNormaliser norm;
  norm.sequences = 2;
  norm.sequence_tokens = D({2, 2});
  auto loss_at = [&](const torch::Tensor& w) {
    PolicyLossInputs i = in;
    i.logp = logp_of(w);
    return ComputeLoss(i, o, norm).loss;
  };
  const torch::Tensor w = w0.clone().requires_grad_(true);
  const torch::Tensor loss = loss_at(w);
  const torch::Tensor grad = torch::autograd::grad({loss}, {w})[0];
  const std::vector<double> numeric =
      NumericGradient([&](const torch::Tensor& v) { return loss_at(v).item<double>(); }, w0);
  ExpectNear(grad, numeric, 1e-8);
  EXPECT_GT(grad.abs().max().item<double>(), 1e-3);  // Not trivially zero.
}

TEST(ValueLossTest, ClippedAndUnclipped) {
  // value_clip 0.5:
  //   t0 v=1.0 old=0.8 R=1.5: (v-R)^2 = 0.25; clip(1.0, 0.3, 1.3) = 1.0 -> same; grad (v-R) = -0.5
  //   t1 v=2.0 old=1.0 R=1.0: 1.0 vs clip -> 1.5: 0.25; the unclipped 1.0 wins; grad 1
  //   t2 v=0.0 old=-1 R=1.0: 1.0 vs clip -> -0.5: 2.25 wins (clipped); no gradient
  // loss = 0.5 * (0.25 + 1 + 2.25) / 3; gradient 0.5 * 2 (v - R) / 3.
  const torch::Tensor v = Leaf({1.0, 2.0, 0.0});
  auto r = ValueLoss(v, D({0.8, 1.0, -1.0}), D({1.5, 1.0, 1.0}), D({1, 1, 1}), 0.5, 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->loss.item<double>(), 0.5 * 3.5 / 3, 1e-12);
  r->loss.backward();
  ExpectNear(v.grad(), {-0.5 / 3, 1.0 / 3, 0}, 1e-12);
  EXPECT_EQ(r->stats.clipped_tokens, 1);
  EXPECT_EQ(r->stats.tokens, 3);
  EXPECT_NEAR(r->stats.squared_error_sum, 2.25, 1e-12);

  auto off = ValueLoss(D({1.0, 2.0, 0.0}), {}, D({1.5, 1.0, 1.0}), D({1, 0, 1}), 0.0, 2);
  ASSERT_TRUE(off.ok());
  EXPECT_NEAR(off->loss.item<double>(), 0.5 * (0.25 + 1.0) / 2, 1e-12);
  EXPECT_EQ(ValueLoss(v, {}, D({1, 1, 1}), D({1, 1, 1}), 0.0, 0).status().field(), "normaliser");
  EXPECT_EQ(ValueLoss(v, {}, D({1, 1, 1}), D({1, 1, 1}), 0.5, 3).status().field(), "old_values");
}

TEST(PolicyLossTest, Float32InputsWork) {
  PolicyLossInputs in = OneSequence({1.5, 0.5}, {1, -1});
  in.logp = in.logp.detach().to(torch::kFloat32).requires_grad_(true);
  in.old_logp = in.old_logp.to(torch::kFloat32);
  in.advantages = in.advantages.to(torch::kFloat32);
  in.mask = in.mask.to(torch::kFloat32);
  const PolicyLossResult r = ComputeLoss(in, {}, Tokens(2));
  EXPECT_EQ(r.loss.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(r.loss.item<float>(), (-1.2 + 0.8) / 2, 1e-6);
}

TEST(PolicyLossTest, ErrorsNameTheInputOrOption) {
  const PolicyLossInputs good = OneSequence({1, 1}, {1, 1});
  auto field = [](const PolicyLossInputs& in, const PolicyLossOptions& o, const LossNormaliser& n) {
    return PolicyLoss(in, o, n).status().field();
  };
  PolicyLossOptions o;
  o.kl_coef = 0.1;
  EXPECT_EQ(field(good, o, Tokens(2)), "ref_logp");
  o = {};
  o.tis_cap = 2;
  EXPECT_EQ(field(good, o, Tokens(2)), "behaviour_logp");
  o = {};
  o.entropy_coef = 0.1;
  EXPECT_EQ(field(good, o, Tokens(2)), "entropy");
  EXPECT_EQ(field(good, {}, Tokens(0)), "normaliser.tokens");
  o = {};
  o.aggregation = LossAggregation::kSeqMeanTokenMean;
  LossNormaliser seqs;
  seqs.sequences = 1;
  EXPECT_EQ(field(good, o, seqs), "normaliser.sequence_tokens");
  PolicyLossInputs bad_seq = good;
  bad_seq.seq_index = I({0, 1});
  o = {};
  o.type = PolicyLossType::kGspo;
  EXPECT_EQ(field(bad_seq, o, Tokens(2)), "seq_index");
  PolicyLossInputs short_mask = good;
  short_mask.mask = D({1});
  EXPECT_EQ(field(short_mask, {}, Tokens(2)), "mask");

  o = {};
  o.type = PolicyLossType::kGspo;
  o.m2po_threshold = 0.01;
  EXPECT_EQ(Validate(o).field(), "loss.m2po_threshold");
  o = {};
  o.dual_clip = 0.5;
  EXPECT_EQ(Validate(o).field(), "loss.dual_clip");
  o = {};
  o.clip_low = 1.1;
  EXPECT_EQ(Validate(o).field(), "loss.clip_low");
  o = {};
  o.clip_high = 0.9;
  EXPECT_EQ(Validate(o).field(), "loss.clip_high");
  EXPECT_TRUE(Validate({}).ok());
}

TEST(PolicyLossTest, NamesRoundTrip) {
  for (PolicyLossType t : {PolicyLossType::kPpoClip, PolicyLossType::kGspo, PolicyLossType::kSft}) {
    EXPECT_EQ(*ParsePolicyLossType(PolicyLossTypeName(t)), t);
  }
  for (KlEstimator e : {KlEstimator::kK1, KlEstimator::kK2, KlEstimator::kK3}) {
    EXPECT_EQ(*ParseKlEstimator(KlEstimatorName(e)), e);
  }
  for (LossAggregation a : {LossAggregation::kTokenMean, LossAggregation::kSeqMeanTokenSum,
                            LossAggregation::kSeqMeanTokenMean}) {
    EXPECT_EQ(*ParseLossAggregation(LossAggregationName(a)), a);
  }
  EXPECT_EQ(ParsePolicyLossType("grpo").status().field(), "loss.type");
  EXPECT_EQ(ParseKlEstimator("k4").status().field(), "loss.kl_estimator");
  EXPECT_EQ(ParseLossAggregation("sum").status().field(), "loss.aggregation");
}

}  // namespace
}  // namespace sluice::trainer
