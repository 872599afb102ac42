// The supervised warm start of a TrainerJob (spec.warmStart, docs/trainer.md "Warm start"):
// before RL, the trainer trains on the Dataflow's training split, each prompt rendered exactly as
// the single-turn workflow renders it for sampling (system prompt, chat template, assistant
// generation prompt) and followed by the row's reference answer and the end-of-turn marker, with
// the loss on the answer and the marker only. That is what production pipelines do before RL, and
// it starts RL from a model that already answers in the task's format.
//
// The rows come from the dataflow (GET /v1/dataset/train): the trainer never sees the held-out
// eval split, so the "before RL" evaluation stays held out.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/dataset.h"
#include "workers/dataflow/trajectory_codec.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::trainer {

// The rows of supervised step `step` (0-based): positions step·n .. step·n + n − 1 of the walk
// over the training split that visits every row once per epoch, each epoch in the order
// DatasetCursor::EpochOrder(size, shuffle = true, seed, epoch) gives. Indices into the split.
// `rows` and `n` must be positive.
std::vector<size_t> WarmStartRows(size_t rows, int64_t n, int64_t step, uint64_t seed);

// The supervised batch of `rows` (one sequence per row, one group each): the rendered prompt, the
// encoded answer, the end-of-turn marker; loss mask, generated-token versions = `version` and
// zero behaviour log-probs on the answer and the marker. InvalidArgument naming the row's id for a
// row without an answer; the template's errors as EncodeConversation returns them.
Result<dataflow::Batch> WarmStartBatch(const std::vector<const dataflow::PromptRow*>& rows,
                                       const rollout::PolicyText& text,
                                       const std::optional<std::string>& system_prompt,
                                       const std::string& policy, int64_t version);

}  // namespace sluice::trainer
