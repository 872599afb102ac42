// How one training batch is laid out over optimizer updates, data-parallel ranks and
// forward/backward passes, as pure functions of the sequences' token counts:
//
//   batch --SplitBalanced(minibatches)--> minibatches (one optimizer update each)
//   minibatch --SplitBalanced(world_size)--> one shard per rank
//   shard --PackMicroBatches(micro_batch_tokens)--> micro-batches (one forward/backward each)
//
// Every rank computes the same layout from the same batch, so no layout is communicated.
// Balancing is greedy longest-first (each sequence, longest first, goes to the part with the
// fewest tokens so far; ties by lower part index, then lower sequence index), which keeps the
// parts within one sequence's length of each other. The loss is normalised by minibatch-wide
// totals (docs/trainer.md, "Aggregation"), so the layout changes the summation order only: 1 rank
// and N ranks train the same parameters up to float rounding.
//
// Units: lengths in tokens. Indices refer to the caller's sequence order; every returned part
// lists its indices in increasing order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::trainer {

// Splits the sequences `indices` (lengths indexed by sequence) into `parts` parts balanced by
// tokens. parts >= 1; parts may exceed the sequence count (some parts are then empty).
std::vector<std::vector<size_t>> SplitBalanced(std::span<const size_t> indices,
                                               std::span<const int64_t> lengths, int parts);

// Consecutive runs of `indices` whose token sum stays within `budget` tokens; a sequence longer
// than the budget gets a micro-batch of its own. budget >= 1. Empty input: no micro-batches.
std::vector<std::vector<size_t>> PackMicroBatches(std::span<const size_t> indices,
                                                  std::span<const int64_t> lengths, int64_t budget);

// Whether a step reads the proximal ("old") log-probs off its update pass instead of a separate
// no-gradient pass before it. They are the pre-update weights' log-probs, so the update pass's
// own (detached) values are the same numbers when the step makes one optimizer update
// (`minibatch_parts` == 1) and nothing reads them before that update (`needed_before_update`:
// the KL-in-reward advantages). This saves one policy forward of the whole batch per step.
bool ProximalLogProbsFromUpdatePass(size_t minibatch_parts, bool needed_before_update);

}  // namespace sluice::trainer
