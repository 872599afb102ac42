#include "workers/kernels/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"
#include "tests/unit/kernels/reference.h"
#include "workers/kernels/philox.h"

namespace sluice::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Download;
using testing::ReferenceDraw;
using testing::ReferenceSample;
using testing::Upload;

// Per-row parameters of one Sample() call.
struct Rows {
  std::vector<float> temperatures;
  std::vector<int32_t> top_k;
  std::vector<float> top_p;
  std::vector<uint64_t> seeds;
  std::vector<uint64_t> offsets;

  void Add(float temperature, int32_t k, float p, uint64_t seed, uint64_t offset) {
    temperatures.push_back(temperature);
    top_k.push_back(k);
    top_p.push_back(p);
    seeds.push_back(seed);
    offsets.push_back(offset);
  }
  int size() const { return static_cast<int>(temperatures.size()); }
};

struct Draws {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

// Runs Sample() on the device and waits for it.
Draws RunSample(const std::vector<float>& logits, int vocab, const Rows& rows) {
  const int batch = rows.size();
  DeviceBuffer d_logits = Upload(logits);
  DeviceBuffer d_temperatures = Upload(rows.temperatures);
  DeviceBuffer d_top_k = Upload(rows.top_k);
  DeviceBuffer d_top_p = Upload(rows.top_p);
  DeviceBuffer d_seeds = Upload(rows.seeds);
  DeviceBuffer d_offsets = Upload(rows.offsets);
  DeviceBuffer d_tokens(batch * sizeof(int32_t));
  DeviceBuffer d_logprobs(batch * sizeof(float));
  const Result<size_t> workspace_bytes = SampleWorkspaceBytes(batch, vocab);
  EXPECT_TRUE(workspace_bytes.ok()) << workspace_bytes.status().ToString();
  if (!workspace_bytes.ok()) return {};
  DeviceBuffer workspace(*workspace_bytes);

  SampleArgs args;
  args.logits = d_logits.as<float>();
  args.temperatures = d_temperatures.as<float>();
  args.top_k = d_top_k.as<int32_t>();
  args.top_p = d_top_p.as<float>();
  args.seeds = d_seeds.as<uint64_t>();
  args.offsets = d_offsets.as<uint64_t>();
  args.tokens = d_tokens.as<int32_t>();
  args.logprobs = d_logprobs.as<float>();
  args.batch = batch;
  args.vocab = vocab;
  args.workspace = workspace.get();
  args.workspace_bytes = workspace.bytes();
  const Status status = Sample(args, nullptr);
  EXPECT_TRUE(status.ok()) << status.ToString();
  testing::Synchronize();
  return {Download<int32_t>(d_tokens, batch), Download<float>(d_logprobs, batch)};
}

std::vector<float> RandomLogits(int batch, int vocab, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> logits(static_cast<size_t>(batch) * vocab);
  for (float& x : logits) x = normal(rng);
  return logits;
}

ReferenceDraw ReferenceFor(const std::vector<float>& logits, int vocab, const Rows& rows, int b) {
  return ReferenceSample(&logits[static_cast<size_t>(b) * vocab], vocab, rows.temperatures[b],
                         rows.top_k[b], rows.top_p[b], rows.seeds[b], rows.offsets[b]);
}

// Every row against the reference: the same token unless the draw sat within float32 rounding
// of a boundary, and the same log-prob.
void ExpectMatchesReference(const std::vector<float>& logits, int vocab, const Rows& rows) {
  const Draws got = RunSample(logits, vocab, rows);
  ASSERT_EQ(static_cast<int>(got.tokens.size()), rows.size());
  for (int b = 0; b < rows.size(); ++b) {
    const ReferenceDraw want = ReferenceFor(logits, vocab, rows, b);
    SCOPED_TRACE("row " + std::to_string(b) + " temperature " +
                 std::to_string(rows.temperatures[b]) + " top_k " + std::to_string(rows.top_k[b]) +
                 " top_p " + std::to_string(rows.top_p[b]));
    if (got.tokens[b] != want.token) {
      EXPECT_LT(want.margin, 1e-5) << "got token " << got.tokens[b] << ", expected " << want.token
                                   << " (u = " << want.u << ")";
      continue;
    }
    EXPECT_NEAR(got.logprobs[b], want.logprob, 1e-4 + 1e-5 * std::abs(want.logprob));
  }
}

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  const PhiloxBlock zero = Philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  const PhiloxBlock ones = Philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
                                         0xffffffffu, 0xffffffffu);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  const PhiloxBlock pi = Philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                       0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(PhiloxTest, UniformIsInTheUnitIntervalAndLooksUniform) {
  double sum = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const float u = PhiloxUniform(42, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);  // Standard error 0.0009.
  EXPECT_EQ(PhiloxUniform(7, 1ull << 40), PhiloxUniform(7, 1ull << 40));
  EXPECT_NE(PhiloxUniform(7, 1ull << 40), PhiloxUniform(7, (1ull << 40) + 1));
  EXPECT_NE(PhiloxUniform(7, 0), PhiloxUniform(8, 0));
}

// The reference itself, on a row small enough to check by hand.
TEST(SamplingReferenceTest, FollowsTheDocumentedSemantics) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f, 2.0f};
  // Greedy: the lowest id among the tied maxima, log-prob at temperature 1.
  ReferenceDraw greedy = ReferenceSample(logits.data(), 5, 0.0f, 3, 0.5f, 1, 2);
  double z = 0;
  for (float x : logits) z += std::exp(double(x) - 3.0);
  EXPECT_EQ(greedy.token, 1);
  EXPECT_NEAR(greedy.logprob, -std::log(z), 1e-12);
  // top_k = 1: the argmax, with certainty.
  ReferenceDraw top1 = ReferenceSample(logits.data(), 5, 0.7f, 1, 1.0f, 1, 2);
  EXPECT_EQ(top1.token, 1);
  EXPECT_NEAR(top1.logprob, 0.0, 1e-12);
  // top_k = 3 keeps {1, 2, 4}; top_p = 0.5 of that keeps the first whose cumulative
  // probability reaches 0.5: 1 alone has e^0 / (1 + 1 + e^-1) = 0.42, so {1, 2}.
  ReferenceDraw top_p = ReferenceSample(logits.data(), 5, 1.0f, 3, 0.5f, 1, 2);
  ASSERT_EQ(top_p.kept, (std::vector<int>{1, 2}));
  EXPECT_NEAR(top_p.kept_probs[0], 0.5, 1e-12);
  EXPECT_TRUE(top_p.token == 1 || top_p.token == 2);
  EXPECT_NEAR(top_p.logprob, std::log(0.5), 1e-12);
  EXPECT_EQ(top_p.token, top_p.u < 0.5 ? 1 : 2);
}

TEST(SamplingTest, MatchesTheReference) {
  SLUICE_SKIP_WITHOUT_GPU();
  for (int vocab : {1000, 50000}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    Rows rows;
    uint64_t seed = 11;
    for (float temperature : {0.0f, 0.5f, 1.0f, 1.7f}) {
      rows.Add(temperature, 0, 1.0f, seed++, 3);          // Plain sampling (or greedy).
      rows.Add(temperature, 40, 1.0f, seed++, 3);         // Top-k.
      rows.Add(temperature, 0, 0.9f, seed++, 3);          // Top-p.
      rows.Add(temperature, 100, 0.6f, seed++, 3);        // Both.
      rows.Add(temperature, vocab + 5, 0.0f, seed++, 3);  // top_p 0: one token.
    }
    const std::vector<float> logits = RandomLogits(rows.size(), vocab, 2.0f, 5);
    ExpectMatchesReference(logits, vocab, rows);
  }
}

TEST(SamplingTest, MatchesTheReferenceOverA256kVocabulary) {
  SLUICE_SKIP_WITHOUT_GPU();
  constexpr int kVocab = 256000;
  Rows rows;
  rows.Add(0.0f, 0, 1.0f, 1, 0);
  rows.Add(1.0f, 0, 1.0f, 2, 0);
  rows.Add(0.8f, 0, 0.95f, 3, 0);
  rows.Add(0.6f, 50, 0.9f, 4, 0);
  ExpectMatchesReference(RandomLogits(rows.size(), kVocab, 3.0f, 6), kVocab, rows);
}

TEST(SamplingTest, IsDeterministicGivenSeedAndOffset) {
  SLUICE_SKIP_WITHOUT_GPU();
  constexpr int kVocab = 2000;
  constexpr int kBatch = 64;
  Rows rows, shifted;
  for (int b = 0; b < kBatch; ++b) {
    rows.Add(1.0f, 0, 1.0f, 1000 + b, 17);
    shifted.Add(1.0f, 0, 1.0f, 1000 + b, 18);
  }
  // Flat logits: every draw is a fresh token, so a changed offset shows.
  const std::vector<float> logits = RandomLogits(kBatch, kVocab, 0.1f, 3);
  const Draws first = RunSample(logits, kVocab, rows);
  const Draws second = RunSample(logits, kVocab, rows);
  EXPECT_EQ(first.tokens, second.tokens);
  EXPECT_EQ(first.logprobs, second.logprobs);
  const Draws other = RunSample(logits, kVocab, shifted);
  int differing = 0;
  for (int b = 0; b < kBatch; ++b) differing += first.tokens[b] != other.tokens[b];
  EXPECT_GT(differing, kBatch / 2);
}

TEST(SamplingTest, TopKOneIsGreedyAndGreedyLogprobIsLogSoftmax) {
  SLUICE_SKIP_WITHOUT_GPU();
  constexpr int kVocab = 3000;
  constexpr int kBatch = 32;
  Rows greedy, top1;
  for (int b = 0; b < kBatch; ++b) {
    greedy.Add(0.0f, 0, 1.0f, b, 0);
    top1.Add(0.9f, 1, 0.7f, b, 0);
  }
  std::vector<float> logits = RandomLogits(kBatch, kVocab, 2.0f, 9);
  // Row 0: a tie for the max; the lower id wins.
  logits[10] = logits[20] = 50.0f;
  const Draws g = RunSample(logits, kVocab, greedy);
  const Draws t = RunSample(logits, kVocab, top1);
  ASSERT_EQ(static_cast<int>(g.tokens.size()), kBatch);
  ASSERT_EQ(static_cast<int>(t.tokens.size()), kBatch);
  EXPECT_EQ(g.tokens[0], 10);
  EXPECT_EQ(g.tokens, t.tokens);
  for (int b = 0; b < kBatch; ++b) {
    const float* row = &logits[static_cast<size_t>(b) * kVocab];
    double z = 0;
    for (int i = 0; i < kVocab; ++i) z += std::exp(double(row[i]) - row[g.tokens[b]]);
    EXPECT_NEAR(g.logprobs[b], -std::log(z), 1e-5) << "row " << b;
    EXPECT_EQ(t.logprobs[b], 0.0f) << "row " << b;  // Certain under the kept distribution.
  }
}

// Many draws from one distribution (the same row, offsets 0..N-1): only kept tokens appear, each
// with the log-prob of its renormalised probability, at frequencies a chi-square test accepts.
TEST(SamplingTest, EmpiricalDistributionMatchesTheKeptProbabilities) {
  SLUICE_SKIP_WITHOUT_GPU();
  constexpr int kVocab = 64;
  constexpr int kDraws = 40000;
  const std::vector<float> row = RandomLogits(1, kVocab, 1.5f, 21);
  struct Setting {
    float temperature;
    int top_k;
    float top_p;
  };
  for (const Setting& s : {Setting{1.0f, 0, 1.0f}, Setting{0.7f, 20, 0.8f}, Setting{1.3f, 0, 0.9f},
                           Setting{0.5f, 8, 1.0f}}) {
    SCOPED_TRACE("temperature " + std::to_string(s.temperature) + " top_k " +
                 std::to_string(s.top_k) + " top_p " + std::to_string(s.top_p));
    Rows rows;
    std::vector<float> logits;
    logits.reserve(static_cast<size_t>(kDraws) * kVocab);
    for (int i = 0; i < kDraws; ++i) {
      rows.Add(s.temperature, s.top_k, s.top_p, 99, static_cast<uint64_t>(i));
      logits.insert(logits.end(), row.begin(), row.end());
    }
    const ReferenceDraw reference =
        ReferenceSample(row.data(), kVocab, s.temperature, s.top_k, s.top_p, 99, 0);
    std::map<int, double> kept;
    for (size_t j = 0; j < reference.kept.size(); ++j) {
      kept[reference.kept[j]] = reference.kept_probs[j];
    }

    const Draws got = RunSample(logits, kVocab, rows);
    ASSERT_EQ(static_cast<int>(got.tokens.size()), kDraws);
    std::map<int, int> counts;
    for (int i = 0; i < kDraws; ++i) {
      const auto it = kept.find(got.tokens[i]);
      ASSERT_NE(it, kept.end()) << "draw " << i << " picked unkept token " << got.tokens[i];
      ASSERT_NEAR(got.logprobs[i], std::log(it->second), 1e-4) << "draw " << i;
      ++counts[got.tokens[i]];
    }
    // Pool tokens expected fewer than 5 times into one cell, as chi-square wants.
    double chi_square = 0;
    double pooled_expected = 0, pooled_observed = 0;
    int cells = 0;
    for (const auto& [token, p] : kept) {
      const double expected = p * kDraws;
      const double observed = counts[token];
      if (expected < 5) {
        pooled_expected += expected;
        pooled_observed += observed;
        continue;
      }
      chi_square += (observed - expected) * (observed - expected) / expected;
      ++cells;
    }
    if (pooled_expected > 0) {
      chi_square += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) /
                    pooled_expected;
      ++cells;
    }
    const int dof = std::max(cells - 1, 1);
    // Mean dof, sd sqrt(2 dof): six sds is a false-alarm rate far below 1e-6.
    EXPECT_LT(chi_square, dof + 6 * std::sqrt(2.0 * dof) + 10) << "cells " << cells;
  }
}

TEST(SamplingTest, RejectsBadArguments) {
  SampleArgs args;
  args.batch = 2;
  args.vocab = 0;
  EXPECT_EQ(Sample(args, nullptr).field(), "vocab");
  args.vocab = 100;
  EXPECT_EQ(Sample(args, nullptr).field(), "logits");
  args.batch = 0;
  EXPECT_TRUE(Sample(args, nullptr).ok());  // Nothing to do.
  args.batch = 1 << 20;
  args.vocab = 1 << 12;
  EXPECT_EQ(Sample(args, nullptr).field(), "vocab");  // batch * vocab overflows int32.
}

}  // namespace
}  // namespace sluice::kernels
