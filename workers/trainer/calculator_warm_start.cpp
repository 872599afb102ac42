#include "workers/trainer/calculator_warm_start.h"

#include <string_view>
#include <utility>

#include "common/ascii.h"
#include "common/process/cancellation.h"
#include "workers/rollout/environments/arithmetic_expression.h"
#include "workers/rollout/environments/calculator_environment.h"
#include "workers/rollout/workflows/multi_turn_workflow.h"
#include "workers/rollout/workflows/transcript.h"
#include "workers/trainer/warm_start.h"

namespace sluice::trainer {
namespace {

Status BadRow(const dataflow::PromptRow& row, const std::string& what) {
  return Status::InvalidArgument("training row " + row.id + " " + what, "spec.warmStart");
}

}  // namespace

std::optional<std::string> RowExpression(const dataflow::PromptRow& row) {
  if (!row.row.is_object()) return std::nullopt;
  const auto it = row.row.find("expression");
  if (it == row.row.end() || !it->is_string()) return std::nullopt;
  const std::string_view expression = StripAsciiSpace(it->get_ref<const std::string&>());
  if (expression.empty()) return std::nullopt;
  return std::string(expression);
}

Result<dataflow::Batch> CalculatorWarmStartBatch(
    const std::vector<const dataflow::PromptRow*>& rows, const rollout::PolicyText& text,
    const std::optional<std::string>& system_prompt, const rollout::ToolCallFormat& format,
    const std::string& policy, int64_t version) {
  using rollout::MultiTurnWorkflow;
  SLUICE_ASSIGN_OR_RETURN(const int32_t end, rollout::EndOfTurnId(text));
  const CancellationToken never{};  // The calculator does no I/O: nothing to interrupt.
  dataflow::Batch b = EmptyWarmStartBatch(policy, version);
  for (const dataflow::PromptRow* row : rows) {
    SLUICE_RETURN_IF_ERROR(CheckHasAnswer(*row));
    const std::optional<std::string> expression = RowExpression(*row);
    if (!expression) {
      return BadRow(*row,
                    "has no \"expression\" field for the calculator call (the built-in arithmetic "
                    "generators write one; a JSONL row needs an \"expression\" string)");
    }
    // The call as the model would write it, read back as the workflow reads it.
    const std::string call_text =
        rollout::FormatToolCall(format, rollout::kCalculatorToolName, *expression);
    const std::optional<rollout::ToolCall> call = rollout::FindToolCall(format, call_text);
    if (!call || call->name != rollout::kCalculatorToolName || call->arguments != *expression) {
      return BadRow(*row, "has an expression that the workflow.toolCall markers cannot carry");
    }
    // Only a value teaches the agent to use the tool; a call answered "error: ..." would not.
    if (Result<double> value = rollout::EvaluateArithmetic(call->arguments); !value.ok()) {
      return BadRow(
          *row, "has an expression the calculator cannot evaluate: " + value.status().message());
    }
    const std::string answer_text = rollout::FormatFinalAnswer(format, row->answer);
    if (rollout::FindToolCall(format, answer_text) ||
        rollout::ExtractFinalAnswer(format, answer_text) !=
            std::string(StripAsciiSpace(row->answer))) {
      return BadRow(*row,
                    "has an answer the workflow would not read back as the final answer (it "
                    "contains a workflow.toolCall marker)");
    }

    // The episode, step by step as MultiTurnWorkflow runs it, with the calculator the rollout
    // workers run (a fresh one per episode, as there).
    rollout::CalculatorEnvironment calculator;
    rollout::EnvironmentTask task;
    task.task_id = "warm-start";
    task.prompt = row->prompt;
    task.answer = row->answer;
    if (row->row.is_object()) task.row = row->row;
    SLUICE_ASSIGN_OR_RETURN(const std::string initial, calculator.Reset(task, never));
    SLUICE_ASSIGN_OR_RETURN(const rollout::StepResult step,
                            calculator.Step(*call, call_text, never));

    rollout::Transcript transcript;
    SLUICE_ASSIGN_OR_RETURN(
        const std::vector<int32_t> prompt,
        rollout::EncodeConversation(
            text,
            rollout::PromptMessages(system_prompt,
                                    MultiTurnWorkflow::FirstUserMessage(row->prompt, initial)),
            true));
    transcript.AppendContext(prompt);
    std::vector<int32_t> called = text.tokenizer->EncodeOrdinary(call_text);
    called.push_back(end);
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> observation,
                            MultiTurnWorkflow::EncodeObservation(text, called, step.observation));
    SLUICE_RETURN_IF_ERROR(
        transcript.AppendGenerated(SupervisedTurn(std::move(called), version), 0));
    transcript.AppendContext(observation);
    std::vector<int32_t> answered = text.tokenizer->EncodeOrdinary(answer_text);
    answered.push_back(end);
    SLUICE_RETURN_IF_ERROR(
        transcript.AppendGenerated(SupervisedTurn(std::move(answered), version), 0));
    AddWarmStartSample(b, row->id, transcript);
  }
  return b;
}

}  // namespace sluice::trainer
