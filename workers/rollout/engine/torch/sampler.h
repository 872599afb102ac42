// Token sampling from a step's logits, with the log-prob RL needs.
//
// For each row (one sequence), with the row's temperature T, top_k and top_p:
//   - T == 0 (greedy): the token is the argmax of the logits (the lowest id on ties) and its
//     log-prob is log_softmax(logits)[token], i.e. under the model's own distribution at
//     temperature 1 (the sampled-from distribution is a point mass; its log-prob 0 is useless).
//   - otherwise: p = softmax(logits / T); keep the top_k most probable tokens (top_k 0: all; ties
//     broken by lower id); of those keep the smallest set, in decreasing probability, whose mass is
//     at least top_p of the top-k set's mass (top_p 1: all; at least one token; top-p applies
//     after top-k, as in transformers, vLLM and workers/kernels/sampling.h); renormalise over the
//     kept set to q. The
//     token is drawn from q and its log-prob is log q[token]: the log-prob under the distribution
//     actually sampled from. That is the behaviour policy's log-prob an importance ratio needs;
//     with T = 1, top_k 0, top_p 1 it equals the model's log-prob exactly.
// The draw is inverse-CDF over q in token-id order with u = DrawUniform(seed, offset), a
// counter-based generator: the same (seed, offset) gives the same u on every machine and in
// every batch composition, so a request's samples do not depend on what else runs with it. The
// engine uses offset = index of the token in the sample's output.
//
// Cost: one batched softmax and cumsum over [rows, vocab]; rows with top_k or top_p also sort
// their row. On a GPU all of it stays on the device (SampleTokensWithTensorOps).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::engine {

struct SamplingRow {
  double temperature = 1.0;
  int32_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0;  // Natural log.
};

// A uniform double in [0, 1) from a counter-based hash of (seed, offset).
double DrawUniform(uint64_t seed, uint64_t offset);

// One token per row of float32 logits [rows.size(), vocab] on any device: CPU logits are sampled
// on the host (SampleOnHost in sampler.cpp), others by SampleTokensWithTensorOps on their device.
std::vector<SampledToken> SampleTokens(const torch::Tensor& logits,
                                       std::span<const SamplingRow> rows);

// The same semantics with libtorch ops on the logits' own device; only the chosen tokens and
// their log-probs (2 numbers a row) come to the host. On a GPU a [rows, vocab] float32 copy to the
// host and a host softmax cost several forwards (docs/benchmarks.md, "The device check on an
// H200"). On CPU logits it gives the host path's result exactly (the same ops in the same order;
// tests/unit/workers/rollout/engine/torch/sampler_test.cpp); on a GPU its cumulative sums round
// differently, so a draw within float rounding of a token boundary may take the neighbour.
// Top-k/top-p rows sort their row on the device and read one threshold count back each.
std::vector<SampledToken> SampleTokensWithTensorOps(const torch::Tensor& logits,
                                                    std::span<const SamplingRow> rows);

}  // namespace sluice::engine
