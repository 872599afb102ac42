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
// This file has the single-turn shape (also the solver's of solve-and-verify, whose first turn is
// rendered exactly like a single-turn prompt) and what every shape shares; the verifier's is in
// verifier_warm_start.h, the calculator agent's (multi-turn) in calculator_warm_start.h.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/workflows/transcript.h"
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

// Shared by the shapes whose transcripts have several turns (built with rollout::Transcript, so
// their layout, turn_starts included, is the rollout workflow's).
//
// An empty warm-start batch of `policy` whose trained tokens carry `version`.
dataflow::Batch EmptyWarmStartBatch(const std::string& policy, int64_t version);
// A model turn the warm start writes instead of sampling, for Transcript::AppendGenerated:
// `tokens`, each with version `version` and log-prob 0 (sft reads no behaviour log-probs).
rollout::Completion SupervisedTurn(std::vector<int32_t> tokens, int64_t version);
// Adds `transcript` to `batch` as the sample of row `row_id` in a group of its own (reward 1,
// finish "stop", the batch's policy, no owners); leaves the transcript empty.
void AddWarmStartSample(dataflow::Batch& batch, const std::string& row_id,
                        rollout::Transcript& transcript);
// InvalidArgument naming spec.warmStart and the row's id for a row without an answer.
Status CheckHasAnswer(const dataflow::PromptRow& row);

}  // namespace sluice::trainer
