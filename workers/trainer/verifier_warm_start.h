// The warm start of a solve-and-verify verifier (spec.warmStart for the Policy that plays the
// Dataflow's "verifier" role; docs/trainer.md, "Warm start"). Each training row becomes exactly
// the transcript the verifier reads at rollout, followed by a supervised verdict:
//
//   [system] user prompt, assistant opening          context: the solver's prompt, rendered as
//                                                     the workflow renders it
//   candidate answer, end of turn                     context: the solver's turn (not this
//   policy's) user kVerifyInstruction, assistant opening        context: SolveAndVerifyWorkflow::
//                                                     EncodeVerifyRequest
//   comparison trace, then                            trained: VerifierTrace(candidate, reference)
//   <answer>yes</answer> or <answer>no</answer>, end  trained (FormatFinalAnswer with the
//                                                     Dataflow's workflow.toolCall markers)
//
// Why a trace: a tiny model taught the one-token verdict alone stays at chance (measured in a
// plain-PyTorch replica and in Sluice, docs/examples.md); taught to write the comparison it makes,
// character by character, before the verdict, the same model learns to judge. The verdict then
// follows from the trace, which the model can compute one short step at a time.
//
// The candidate is the row's reference answer (verdict yes) or a wrong answer near it (verdict
// no), about half each, chosen from (seed, row index) alone: the same row always gets the same
// candidate under one seed, whichever step or rank builds it. The answer is written bare, as the
// single-turn warm start teaches a solver to write it. The rendering uses the workflow's own
// functions (SolveAndVerifyWorkflow's statics, transcript.h), so the two cannot drift.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::trainer {

// What the solver's turn says in one verifier transcript.
struct VerifierCandidate {
  std::string answer;    // The candidate answer's text.
  bool correct = false;  // Whether it is the row's answer: the verdict to learn (yes / no).
};

// A wrong answer near `answer`, a pure function of (answer, key), never equal to `answer`:
//   - an integer (an optional '-', then ASCII digits, fitting int64 after the move): moved by
//     ±1, ±2 or ±3, or (half the keys) with one digit changed;
//   - any other text with an ASCII digit: one digit changed.
// A changed digit never becomes a leading zero of a longer number ("42" never "02").
// nullopt when `answer` has no ASCII digit (nothing numeric to get wrong).
std::optional<std::string> PerturbAnswer(std::string_view answer, uint64_t key);

// The comparison the verifier writes before its verdict: for each position i below the longer
// of the two, the candidate's character, the reference's character ('_' past either one's end)
// and '=' when they match or 'x' when not, then a space. E.g. ("1285", "1284") -> "11= 22= 88=
// 54x ". Bytes, not code points: the built-in tokenizers are byte-level.
std::string VerifierTrace(std::string_view candidate, std::string_view reference);

// The candidate for `row`, at position `index` of the training split: correct (the row's answer)
// when a draw from (seed, index) says so, with probability 1/2, else PerturbAnswer of the answer
// with a key from the same draw. InvalidArgument naming spec.warmStart and the row's id for a row
// without an answer, or one whose answer has no digit to perturb.
Result<VerifierCandidate> PickVerifierCandidate(const dataflow::PromptRow& row, size_t index,
                                                uint64_t seed);

// The verifier's supervised batch of split[i] for each i in `picked` (one sequence per row, one
// group each, in that order): the transcript above with loss mask 1, version `version` and zero
// behaviour log-probs on the verdict and its end-of-turn marker only. `format`: the Dataflow's
// workflow.toolCall (its answer markers frame the verdict).
// Errors: InvalidArgument for an index outside the split, PickVerifierCandidate's, and the
// template's (EncodeConversation, EncodeFollowUp, EndOfTurnId).
Result<dataflow::Batch> VerifierWarmStartBatch(std::span<const dataflow::PromptRow> split,
                                               const std::vector<size_t>& picked,
                                               const rollout::PolicyText& text,
                                               const std::optional<std::string>& system_prompt,
                                               const rollout::ToolCallFormat& format, uint64_t seed,
                                               const std::string& policy, int64_t version);

}  // namespace sluice::trainer
