#include "workers/rollout/environments/calculator_environment.h"

#include <cmath>
#include <cstdio>

#include "workers/rollout/environments/arithmetic_expression.h"

namespace sluice::rollout {

namespace {

// Whole numbers below this print in full; beyond it a double no longer holds every integer
// exactly in the digits "%.0f" would print, so scientific notation is the honest form.
constexpr double kLargestPrintedInteger = 1e15;

}  // namespace

std::string FormatCalculatorValue(double value) {
  char buf[64];
  if (value == 0) return "0";  // Also -0, which "%.0f" would print as "-0".
  if (std::fabs(value) < kLargestPrintedInteger && value == std::trunc(value)) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.12g", value);
  }
  return buf;
}

Result<std::string> CalculatorEnvironment::Reset(const EnvironmentTask& /*task*/,
                                                 const CancellationToken& /*cancel*/) {
  return std::string();
}

Result<StepResult> CalculatorEnvironment::Step(const ToolCall& call, const std::string& /*text*/,
                                               const CancellationToken& /*cancel*/) {
  StepResult result;
  if (call.name != kCalculatorToolName) {
    // The name is the model's text: cap it so a runaway "name" cannot flood the conversation.
    result.observation = "unknown tool '" + call.name.substr(0, 64) +
                         "'; available: " + std::string(kCalculatorToolName);
    return result;
  }
  Result<double> value = EvaluateArithmetic(call.arguments);
  result.observation =
      value.ok() ? FormatCalculatorValue(*value) : "error: " + value.status().message();
  return result;
}

}  // namespace sluice::rollout
