// CalculatorEnvironment: the built-in "calculator" tool (spec.workflow.environment.builtin:
// calculator). A call's arguments are an arithmetic expression (arithmetic_expression.h); the
// observation is its value, or "error: <what is wrong>" so the model can correct itself.
//
// Values are written as integers when they are whole and below 1e15 in magnitude ("84", "-3"),
// otherwise with up to 12 significant digits ("0.333333333333", "1e+20"), which hides binary
// rounding (0.1+0.2 is "0.3") while keeping the precision a model can use.
//
// The calculator has no state, never ends the episode and never scores it (the workflow's reward
// does). It does no I/O, so cancellation has nothing to interrupt.
//
// Thread safety: an instance belongs to one episode; FormatCalculatorValue is a pure function.
#pragma once

#include <string>

#include "workers/rollout/environments/environment.h"

namespace sluice::rollout {

inline constexpr char kCalculatorToolName[] = "calculator";

// The observation text for a computed value (see above). `value` must be finite.
std::string FormatCalculatorValue(double value);

class CalculatorEnvironment final : public Environment {
 public:
  // Returns "" (the task needs no introduction from the environment).
  Result<std::string> Reset(const EnvironmentTask& task, const CancellationToken& cancel) override;
  // Tool "calculator": the value of call.arguments, or "error: ..." for a bad expression. Another
  // tool: "unknown tool 'x'; available: calculator". Never an error Status, never done.
  Result<StepResult> Step(const ToolCall& call, const std::string& text,
                          const CancellationToken& cancel) override;
};

}  // namespace sluice::rollout
