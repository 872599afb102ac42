// SampleTokens: greedy, temperature, top-k and top-p semantics, the log-prob of the distribution
// actually sampled from, and reproducibility from (seed, offset).
#include "workers/rollout/engine/torch/sampler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <vector>

namespace sluice::engine {
namespace {

torch::Tensor Row(const std::vector<float>& probs) {
  return torch::log(torch::tensor(probs)).unsqueeze(0);
}

TEST(SamplerTest, GreedyTakesTheArgmaxWithTheTemperatureOneLogProb) {
  torch::Tensor logits = torch::tensor({{0.5f, 2.0f, 2.0f, -1.0f}, {3.0f, 0.0f, 1.0f, 1.0f}});
  const std::vector<SamplingRow> rows = {{0.0, 0, 1.0, 1, 0}, {0.0, 2, 0.5, 2, 0}};
  std::vector<SampledToken> out = SampleTokens(logits, rows);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, 1);  // Lowest id of the tie.
  EXPECT_EQ(out[1].token, 0);
  torch::Tensor lp = torch::log_softmax(logits, 1);
  EXPECT_NEAR(out[0].logprob, lp[0][1].item<float>(), 1e-6);
  EXPECT_NEAR(out[1].logprob, lp[1][0].item<float>(), 1e-6);
}

TEST(SamplerTest, UnfilteredLogProbIsTheTemperedModelLogProb) {
  torch::manual_seed(1);
  torch::Tensor logits = torch::randn({8, 50});
  std::vector<SamplingRow> rows;
  for (int i = 0; i < 8; ++i) rows.push_back({i % 2 ? 0.7 : 1.0, 0, 1.0, 100u + i, 3});
  std::vector<SampledToken> out = SampleTokens(logits, rows);
  for (int i = 0; i < 8; ++i) {
    const float t = static_cast<float>(rows[static_cast<size_t>(i)].temperature);
    torch::Tensor lp = torch::log_softmax(logits[i] / t, 0);
    EXPECT_NEAR(out[static_cast<size_t>(i)].logprob,
                lp[out[static_cast<size_t>(i)].token].item<float>(), 1e-5);
  }
}

// The tensor-op path (what SampleTokens runs for GPU logits) is the host path's arithmetic in
// libtorch ops: on the CPU both give the same tokens and the same log-probs, bit for bit, for
// greedy, tempered, top-k, top-p and top-k + top-p rows in one batch.
TEST(SamplerTest, TensorOpsPathEqualsTheHostPathOnTheCpu) {
  torch::manual_seed(12);
  const int64_t m = 40;
  torch::Tensor logits = 3.0 * torch::randn({m, 1000});
  logits[3][7] = logits[3].max().item<float>();  // A tie for a greedy row: the lower id wins.
  std::vector<SamplingRow> rows;
  for (int64_t r = 0; r < m; ++r) {
    SamplingRow row;
    row.seed = 500 + static_cast<uint64_t>(r);
    row.offset = static_cast<uint64_t>(r % 7);
    switch (r % 5) {
      case 0:
        row.temperature = 0;
        break;
      case 1:
        row.temperature = 0.7;
        break;
      case 2:
        row.top_k = 20;
        break;
      case 3:
        row.top_p = 0.8;
        row.temperature = 1.3;
        break;
      default:
        row.top_k = 50;
        row.top_p = 0.5;
        break;
    }
    rows.push_back(row);
  }
  const std::vector<SampledToken> host = SampleTokens(logits, rows);
  const std::vector<SampledToken> ops = SampleTokensWithTensorOps(logits, rows);
  ASSERT_EQ(host.size(), ops.size());
  std::map<int32_t, int> distinct;
  for (size_t r = 0; r < host.size(); ++r) {
    EXPECT_EQ(ops[r].token, host[r].token) << "row " << r;
    EXPECT_EQ(ops[r].logprob, host[r].logprob) << "row " << r;
    ++distinct[host[r].token];
  }
  EXPECT_GT(distinct.size(), 20u);  // The rows really drew different tokens.
  EXPECT_TRUE(SampleTokensWithTensorOps(torch::zeros({0, 10}), {}).empty());
}

TEST(SamplerTest, SameSeedAndOffsetReproduceWhateverTheBatch) {
  torch::manual_seed(2);
  torch::Tensor logits = torch::randn({4, 64});
  std::vector<SamplingRow> rows = {
      {1.0, 0, 1.0, 7, 0}, {0.8, 10, 0.9, 8, 5}, {1.2, 0, 0.5, 9, 1}, {1.0, 3, 1.0, 10, 2}};
  std::vector<SampledToken> all = SampleTokens(logits, rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<SampledToken> one =
        SampleTokens(logits.slice(0, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1),
                     std::vector<SamplingRow>{rows[i]});
    EXPECT_EQ(one[0].token, all[i].token) << i;
    EXPECT_EQ(one[0].logprob, all[i].logprob) << i;
  }
  EXPECT_NE(DrawUniform(7, 0), DrawUniform(7, 1));
  EXPECT_NE(DrawUniform(7, 0), DrawUniform(8, 0));
  EXPECT_EQ(DrawUniform(7, 3), DrawUniform(7, 3));
}

TEST(SamplerTest, TopKOneIsGreedyWithLogProbZero) {
  torch::Tensor logits = Row({0.1f, 0.6f, 0.3f});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<SampledToken> out =
        SampleTokens(logits, std::vector<SamplingRow>{{1.0, 1, 1.0, seed, 0}});
    EXPECT_EQ(out[0].token, 1);
    EXPECT_NEAR(out[0].logprob, 0.0f, 1e-6);
  }
}

TEST(SamplerTest, TopPKeepsTheSmallestSetAndRenormalises) {
  // p = 0.5, 0.3, 0.15, 0.05; top_p 0.7 keeps {0, 1} (0.5 < 0.7 <= 0.8): q = 0.625, 0.375.
  torch::Tensor logits = Row({0.5f, 0.3f, 0.15f, 0.05f});
  std::map<int32_t, int> counts;
  constexpr int kDraws = 4000;
  for (int i = 0; i < kDraws; ++i) {
    std::vector<SampledToken> out =
        SampleTokens(logits, std::vector<SamplingRow>{{1.0, 0, 0.7, 42, static_cast<uint64_t>(i)}});
    ++counts[out[0].token];
    const double q = out[0].token == 0 ? 0.625 : 0.375;
    ASSERT_TRUE(out[0].token == 0 || out[0].token == 1) << out[0].token;
    EXPECT_NEAR(out[0].logprob, std::log(q), 1e-5);
  }
  EXPECT_NEAR(counts[0] / static_cast<double>(kDraws), 0.625, 0.03);
  // top_k 3 and top_p 0.99 together: {0, 1, 2}, q = p / 0.95.
  counts.clear();
  for (int i = 0; i < kDraws; ++i) {
    std::vector<SampledToken> out = SampleTokens(
        logits, std::vector<SamplingRow>{{1.0, 3, 0.99, 43, static_cast<uint64_t>(i)}});
    ++counts[out[0].token];
  }
  EXPECT_EQ(counts.count(3), 0u);
  EXPECT_NEAR(counts[2] / static_cast<double>(kDraws), 0.15 / 0.95, 0.025);
  // top-p measures mass within the top-k set: with top_k 2, token 0 has 0.5 / 0.8 = 0.625 of it,
  // so top_p 0.6 keeps token 0 alone (against the full vocabulary 0.5 < 0.6 would keep two).
  for (uint64_t i = 0; i < 50; ++i) {
    std::vector<SampledToken> out =
        SampleTokens(logits, std::vector<SamplingRow>{{1.0, 2, 0.6, 44, i}});
    EXPECT_EQ(out[0].token, 0);
    EXPECT_NEAR(out[0].logprob, 0.0f, 1e-6);
  }
}

TEST(SamplerTest, TemperatureSharpensTheSampledDistribution) {
  torch::Tensor logits = Row({0.6f, 0.4f});
  int first = 0;
  constexpr int kDraws = 3000;
  for (int i = 0; i < kDraws; ++i) {
    first += SampleTokens(logits,
                          std::vector<SamplingRow>{{0.5, 0, 1.0, 5, static_cast<uint64_t>(i)}})[0]
                 .token == 0;
  }
  // softmax(log p / 0.5) = p^2 / sum p^2 = 0.36 / 0.52.
  EXPECT_NEAR(first / static_cast<double>(kDraws), 0.36 / 0.52, 0.03);
}

}  // namespace
}  // namespace sluice::engine
