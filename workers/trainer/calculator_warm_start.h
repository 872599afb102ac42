// The warm start of a multi-turn agent with the built-in calculator environment (spec.warmStart
// with a Dataflow whose workflow is multi-turn, environment builtin calculator; docs/trainer.md,
// "Warm start"). Each training row becomes the two-turn episode a good agent has at rollout:
//
//   [system] user prompt, assistant opening          context (MultiTurnWorkflow::FirstUserMessage
//                                                     with the calculator's initial observation)
//   <tool>calculator EXPR</tool>, end of turn         trained (FormatToolCall)
//   tool message: the calculator's value of EXPR,     context
//   (MultiTurnWorkflow::EncodeObservation) assistant opening <answer>ANSWER</answer>, end of turn
//   trained (FormatFinalAnswer)
//
// EXPR is the row's "expression" field (the built-in arithmetic generators write it; the dataflow
// serves it with the training split); ANSWER is the row's reference answer, what the workflow's
// reward compares the final answer with. The observation comes from CalculatorEnvironment::Step,
// the code that answers the call at rollout, and the markers are the Dataflow's
// workflow.toolCall, so warm start and rollout cannot drift apart.
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
#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::trainer {

// The row's "expression" field (PromptRow::row), trimmed, when it is a string with a non-blank
// value; nullopt otherwise (no such field, another JSON type, or only whitespace).
std::optional<std::string> RowExpression(const dataflow::PromptRow& row);

// The calculator agent's supervised batch of `rows` (one sequence per row, one group each): the
// transcript above with loss mask 1, version `version` and zero behaviour log-probs on the two
// model turns (each with its end-of-turn marker), mask 0 on the prompt and the observation.
// `format`: the Dataflow's workflow.toolCall. InvalidArgument naming spec.warmStart and the row's
// id for a row without an answer, without an expression, with an expression the calculator cannot
// evaluate or the call markers cannot carry, or an answer the workflow would not read back as the
// final answer; the template's errors as EncodeConversation and EncodeFollowUp return them.
Result<dataflow::Batch> CalculatorWarmStartBatch(
    const std::vector<const dataflow::PromptRow*>& rows, const rollout::PolicyText& text,
    const std::optional<std::string>& system_prompt, const rollout::ToolCallFormat& format,
    const std::string& policy, int64_t version);

}  // namespace sluice::trainer
