// PagedForward against the training forward: the log-prob of every token computed step by step
// through the paged KV cache (chunked prefill mixed with decode, scattered blocks) equals the
// packed training forward's, for a Llama-shaped and a Qwen3-shaped model (GQA, QK norm).
#include "workers/rollout/engine/torch/paged_forward.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sluice::engine {
namespace {

// Random weights at a scale where a wrong cache slot or mask changes log-probs visibly.
model::DecoderModel Model(const std::string& family) {
  Result<model::DecoderModel> m = model::DecoderModel::FromBuiltin(
      "builtin:tiny?layers=2&d=64&heads=4&kv_heads=2&ff=96&vocab=300&seed=5&family=" + family);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  for (auto& [name, t] : m->NamedParameters()) {
    const bool norm = name.find("norm") != std::string::npos;
    t.copy_(norm ? 1.0 + 0.1 * torch::randn_like(t) : 0.2 * torch::randn_like(t));
  }
  return std::move(m).value();
}

class PagedForwardTest : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Families, PagedForwardTest, ::testing::Values("llama", "qwen3"));

TEST_P(PagedForwardTest, StepByStepLogProbsEqualTheTrainingForward) {
  const model::DecoderModel model = Model(GetParam());
  constexpr int64_t kBlock = 4;
  const std::vector<int64_t> lengths = {23, 7, 41};
  torch::manual_seed(3);
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> all;
  std::vector<int64_t> cu{0};
  for (int64_t len : lengths) {
    torch::Tensor t = torch::randint(300, {len}, torch::kInt64);
    seqs.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
    all.insert(all.end(), t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
    cu.push_back(cu.back() + len);
  }
  // Reference: packed training forward, log p(token[i + 1] | tokens[0..i]).
  Result<torch::Tensor> hidden = model.Forward(torch::tensor(all), torch::tensor(cu));
  ASSERT_TRUE(hidden.ok()) << hidden.status().ToString();
  std::vector<int64_t> targets(all.size(), 0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int64_t i = cu[s]; i + 1 < cu[s + 1]; ++i)
      targets[static_cast<size_t>(i)] = all[static_cast<size_t>(i + 1)];
  }
  Result<model::TokenLogProbsResult> ref = model.TokenLogProbs(*hidden, torch::tensor(targets), 16);
  ASSERT_TRUE(ref.ok());

  // Blocks handed out interleaved across sequences (so slots are not contiguous), in reverse.
  Result<PagedKvCache> cache =
      PagedKvCache::Create(model.config(), 64, kBlock, torch::kFloat32, torch::kCPU);
  ASSERT_TRUE(cache.ok());
  std::vector<std::vector<int32_t>> tables(seqs.size());
  int32_t next = 63;
  for (int64_t b = 0; b < 11; ++b) {
    for (auto& t : tables) t.push_back(next--);
  }
  // Steps: chunk sizes cycle per sequence, so prefill chunks and decode tokens mix.
  const std::vector<int64_t> sizes = {5, 1, 1, 3, 1, 8, 1, 1};
  std::vector<int64_t> pos(seqs.size(), 0);
  double max_diff = 0;
  int compared = 0;
  for (int step = 0;; ++step) {
    std::vector<ForwardChunk> chunks;
    std::vector<size_t> owner;
    for (size_t s = 0; s < seqs.size(); ++s) {
      const auto len = static_cast<int64_t>(seqs[s].size());
      if (pos[s] >= len) continue;
      const int64_t n = std::min(sizes[(step + s) % sizes.size()], len - pos[s]);
      ForwardChunk c;
      c.tokens = std::span<const int32_t>(seqs[s]).subspan(static_cast<size_t>(pos[s]),
                                                           static_cast<size_t>(n));
      c.start = pos[s];
      c.block_table = tables[s];
      c.needs_logits = true;
      chunks.push_back(c);
      owner.push_back(s);
    }
    if (chunks.empty()) break;
    Result<torch::Tensor> logits = PagedForward(model, *cache, chunks);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    ASSERT_EQ(logits->size(0), static_cast<int64_t>(chunks.size()));
    torch::Tensor logp = torch::log_softmax(*logits, 1);
    for (size_t c = 0; c < chunks.size(); ++c) {
      const size_t s = owner[c];
      const int64_t last = chunks[c].start + static_cast<int64_t>(chunks[c].tokens.size()) - 1;
      pos[s] = last + 1;
      if (last + 1 >= static_cast<int64_t>(seqs[s].size())) continue;
      const double got =
          logp[static_cast<int64_t>(c)][seqs[s][static_cast<size_t>(last + 1)]].item<double>();
      const double want = ref->log_probs[cu[s] + last].item<double>();
      max_diff = std::max(max_diff, std::abs(got - want));
      ++compared;
    }
  }
  EXPECT_GT(compared, 20);
  EXPECT_LT(max_diff, 1e-4);
}

TEST(PagedForwardErrorsTest, ShortBlockTableAndBadTokensAreRejected) {
  const model::DecoderModel model = Model("llama");
  Result<PagedKvCache> cache =
      PagedKvCache::Create(model.config(), 4, 4, torch::kFloat32, torch::kCPU);
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const std::vector<int32_t> one_block = {0};
  ForwardChunk c{tokens, 0, one_block, true};
  Result<torch::Tensor> r = PagedForward(model, *cache, std::vector<ForwardChunk>{c});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("does not cover position 4"), std::string::npos);
  const std::vector<int32_t> bad = {1, 300};
  const std::vector<int32_t> two_blocks = {0, 1};
  r = PagedForward(model, *cache, std::vector<ForwardChunk>{{bad, 0, two_blocks, true}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> outside = {7};
  r = PagedForward(model, *cache, std::vector<ForwardChunk>{{tokens, 0, outside, true}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      PagedKvCache::Create(model.config(), 0, 4, torch::kFloat32, torch::kCPU).status().code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::engine
