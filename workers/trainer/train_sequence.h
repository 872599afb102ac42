// TrainSequence: one sample of a dataflow batch as the trainer's loss sees it, with the
// per-token arrays shifted for next-token prediction (no libtorch).
//
// The model reads tokens[0 .. L-2] and predicts tokens[1 .. L-1]; target position j (0-based,
// L-1 of them) is token j + 1. `mask`, `behaviour_logp` and `versions` are the sample's arrays
// for tokens 1 .. L-1, so a prompt token never enters the loss and the first generated token is
// predicted from the last prompt token.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/trajectory_codec.h"

namespace sluice::trainer {

struct TrainSequence {
  std::vector<int64_t> tokens;        // L input+target tokens.
  std::vector<float> mask;            // [L-1] 1: train on target j.
  std::vector<float> behaviour_logp;  // [L-1] rollout log-prob of target j (natural log).
  std::vector<int64_t> versions;      // [L-1] weight version that generated target j, or -1.
  double reward = 0.0;                // The sample's reward for this policy.
  int64_t group = 0;                  // Group index within the batch (same prompt).
  double loss_weight = 1.0;           // The dataflow's staleness down-weighting, in (0, 1].
  int64_t generated_tokens = 0;       // Masked targets: the completion length for shaping.

  int64_t length() const { return static_cast<int64_t>(tokens.size()); }
  int64_t masked_targets() const { return generated_tokens; }
};

// Converts every sample of `batch`. InvalidArgument naming "samples[i].<field>" for a token
// outside [0, vocab_size), a sequence longer than max_length tokens, or per-token arrays of
// different lengths. Samples shorter than 2 tokens have no targets and are kept (they weigh
// nothing).
Result<std::vector<TrainSequence>> ToTrainSequences(const dataflow::Batch& batch,
                                                    int64_t vocab_size, int64_t max_length);

// Token staleness of the batch's generated targets against `current_version` (the version the
// trainer is about to update): mean and max of current_version - versions[j] over masked targets
// with a version >= 0. Zeros when there are none.
struct Staleness {
  double mean = 0.0;
  double max = 0.0;
};
Staleness TokenStaleness(const std::vector<TrainSequence>& sequences, int64_t current_version);

}  // namespace sluice::trainer
