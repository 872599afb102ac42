// One engine step of the model over the paged KV cache: a mix of prefill chunks and decode
// tokens of many sequences, run as one packed batch.
//
// Each chunk is tokens [start, start + n) of one sequence whose KV for positions [0, start) is
// already in the cache (computed in earlier steps or shared through the prefix cache). The step
// writes the chunk's keys and values into the cache at the slots its block table gives, and each
// chunk attends to its sequence's cached positions [0, start + n) causally. The math is the
// training forward's (DecoderModel::Forward) layer for layer; only attention reads keys and
// values from the cache instead of the packed batch, so the log-probs of a token equal the
// training forward's (to float rounding).
//
// Attention: chunks of one token (decode) are batched, sorted by context length and split so no
// batch pads more than `decode_slots_per_batch` [batch x context] slots, as one masked matmul per
// layer; longer chunks (prefill) attend one by one.
//
// On a CUDA device, in an engine built with workers/kernels, the norms (fused with the residual
// adds), rotary, the cache write and decode attention run as those kernels instead, decode
// attention reading the paged cache in place (cuda_decode_kernels.h); prefill still attends one
// chunk at a time through libtorch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>

#include "common/status.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/rollout/engine/torch/paged_kv_cache.h"

namespace sluice::engine {

struct ForwardChunk {
  std::span<const int32_t> tokens;       // The chunk's n tokens (borrowed).
  int64_t start = 0;                     // Position of tokens[0] in its sequence.
  std::span<const int32_t> block_table;  // Covers positions [0, start + n) (borrowed).
  bool needs_logits = false;             // Return the logits after the chunk's last token.
};

struct ForwardOptions {
  int64_t decode_slots_per_batch = 1 << 18;
};

// Float32 logits [M, vocab] for the M chunks with needs_logits, in chunk order. InvalidArgument
// for an empty chunk, a token outside the vocabulary or a block table too short.
Result<torch::Tensor> PagedForward(const model::DecoderModel& model, PagedKvCache& cache,
                                   std::span<const ForwardChunk> chunks,
                                   const ForwardOptions& options = {});

}  // namespace sluice::engine
