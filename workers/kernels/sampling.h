// Sample: picks one token per row of a float32 logits matrix, with per-row temperature, top-k,
// top-p and a counter-based random draw, and reports the log-probability of the pick under the
// distribution it was actually drawn from (the behaviour policy's log-prob that RL needs).
//
// Semantics, for row b with logits x[0 .. vocab) (all float32, finite max, no NaN):
//
// Order: the tokens sorted by decreasing logit, ties broken by lower token id. This is also the
// order of decreasing probability at any temperature > 0.
//
// Greedy, when temperature[b] <= 0 (or NaN):
//   token   = the first token in that order (argmax, lowest id on ties)
//   logprob = log_softmax(x)[token] = -log(sum_i exp(x[i] - x[token]))   (temperature 1)
// top_k, top_p, seed and offset are ignored.
//
// Sampling, when temperature[b] = t > 0, with weights w_i = exp((x_i - max(x)) / t):
//   1. Top-k: keep the first k tokens of the order, k = top_k[b] when 0 < top_k[b] < vocab,
//      else every token (top_k <= 0 is off).
//   2. Top-p: of those, keep the shortest prefix of the order whose weight is at least
//      top_p[b] times the weight of all tokens kept by step 1; that is, top-p applies to the
//      top-k-renormalised distribution, as Hugging Face's and vLLM's samplers do. At least one
//      token is always kept; top_p[b] >= 1 (or NaN) is off.
//   3. Draw u = PhiloxUniform(seeds[b], offsets[b]) in [0, 1) (philox.h) and pick, by inverse CDF
//      over the kept prefix in the order, the first token whose cumulative weight exceeds
//      u * (weight of the kept prefix). Tokens of weight 0 are never picked.
//   logprob = log(w_token / weight of the kept prefix)
//           = (x_token - max(x)) / t - log(weight of the kept prefix).
// Weights and sums are float32 (cumulative sums per thread chunk, then a block scan), so near a
// boundary (u or top_p within ~1e-6 relative of a cumulative sum) the pick may differ from an
// exact-arithmetic one.
//
// Determinism: the result for a row depends only on that row's logits, parameters, seed and
// offset (not on the batch around it or on the launch). Callers give each row of each step a
// distinct (seed, offset), typically a per-sequence seed and offset = the decode step.
//
// Cost: every row is fully sorted on the device (a segmented radix sort of 64-bit keys), then one
// thread block per row scans it; greedy rows are sorted too.
//
// All pointers are device pointers. Queued on `stream` (a cudaStream_t, nullptr for the legacy
// default stream); returns without waiting. Thread safety: reentrant; concurrent calls need
// distinct workspaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace sluice::kernels {

struct SampleArgs {
  const float* logits = nullptr;        // [batch, vocab] float32, contiguous.
  const float* temperatures = nullptr;  // [batch].
  const int32_t* top_k = nullptr;       // [batch]; <= 0 is off.
  const float* top_p = nullptr;         // [batch]; >= 1 is off.
  const uint64_t* seeds = nullptr;      // [batch].
  const uint64_t* offsets = nullptr;    // [batch].
  int32_t* tokens = nullptr;            // [batch] out: token ids in [0, vocab).
  float* logprobs = nullptr;            // [batch] out: natural log.
  int batch = 0;                        // 0 queues nothing.
  int vocab = 0;                        // batch * vocab must fit in int32.
  // Device scratch of at least SampleWorkspaceBytes(batch, vocab) bytes, 256-byte aligned
  // (cudaMalloc's alignment). Owned by the caller; reusable once the stream has passed this call.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Scratch bytes Sample needs: two [batch, vocab] uint64 key buffers (16 bytes per logit, so
// 1 GiB for 256 rows of a 256k vocabulary), segment offsets and cub's sort storage. Asks cub,
// which needs a CUDA device: Unavailable without one, InvalidArgument for bad shapes.
Result<size_t> SampleWorkspaceBytes(int batch, int vocab);

// Queues the sampling. InvalidArgument (naming the field) for null pointers, bad shapes or a
// workspace that is too small.
Status Sample(const SampleArgs& args, void* stream);

}  // namespace sluice::kernels
