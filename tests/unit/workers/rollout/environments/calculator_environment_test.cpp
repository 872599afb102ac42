#include "workers/rollout/environments/calculator_environment.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::rollout {
namespace {

StepResult StepOk(CalculatorEnvironment& environment, const std::string& name,
                  const std::string& arguments) {
  Result<StepResult> result = environment.Step(ToolCall{name, arguments},
                                               "<tool>" + name + " " + arguments + "</tool>", {});
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? *result : StepResult{};
}

TEST(CalculatorEnvironment, ResetIsEmpty) {
  CalculatorEnvironment environment;
  EnvironmentTask task;
  task.prompt = "What is 12*(3+4)?";
  Result<std::string> observation = environment.Reset(task, {});
  ASSERT_TRUE(observation.ok()) << observation.status().ToString();
  EXPECT_EQ(*observation, "");
}

TEST(CalculatorEnvironment, EvaluatesTheArguments) {
  CalculatorEnvironment environment;
  ASSERT_TRUE(environment.Reset({}, {}).ok());
  const StepResult result = StepOk(environment, "calculator", "12*(3+4)");
  EXPECT_EQ(result.observation, "84");
  EXPECT_FALSE(result.done);
  EXPECT_FALSE(result.reward.has_value());
}

TEST(CalculatorEnvironment, FormatsIntegersAndTwelveSignificantDigits) {
  CalculatorEnvironment environment;
  struct Case {
    const char* expression;
    const char* observation;
  };
  const Case cases[] = {
      {"2^10", "1024"},
      {"-3", "-3"},
      {"0.5*0", "0"},
      {"-0", "0"},
      {"0.1+0.2", "0.3"},
      {"1/3", "0.333333333333"},
      {"-2/3", "-0.666666666667"},
      {"7/2", "3.5"},
      {"999999999999999", "999999999999999"},  // Below 1e15: every digit.
      {"10^15", "1e+15"},
      {"2^60", "1.15292150461e+18"},
      {"1e-7", "1e-07"},
      {"sqrt(2)", "1.41421356237"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StepOk(environment, "calculator", c.expression).observation, c.observation)
        << c.expression;
  }
}

TEST(CalculatorEnvironment, BadExpressionIsAnErrorObservation) {
  CalculatorEnvironment environment;
  const StepResult result = StepOk(environment, "calculator", "1/(2-2)");
  EXPECT_EQ(result.observation, "error: division by zero at position 2");
  EXPECT_FALSE(result.done);
  EXPECT_EQ(StepOk(environment, "calculator", "").observation, "error: empty expression");
}

TEST(CalculatorEnvironment, UnknownToolIsAnObservation) {
  CalculatorEnvironment environment;
  EXPECT_EQ(StepOk(environment, "python", "print(1)").observation,
            "unknown tool 'python'; available: calculator");
  EXPECT_EQ(StepOk(environment, "Calculator", "1").observation,
            "unknown tool 'Calculator'; available: calculator");
  EXPECT_EQ(StepOk(environment, "", "").observation, "unknown tool ''; available: calculator");
}

TEST(FormatCalculatorValue, Boundaries) {
  EXPECT_EQ(FormatCalculatorValue(1e15 - 1), "999999999999999");
  EXPECT_EQ(FormatCalculatorValue(-(1e15 - 1)), "-999999999999999");
  EXPECT_EQ(FormatCalculatorValue(1e15), "1e+15");
  EXPECT_EQ(FormatCalculatorValue(123456789.125), "123456789.125");
  EXPECT_EQ(FormatCalculatorValue(1234567890123.5), "1.23456789012e+12");
}

}  // namespace
}  // namespace sluice::rollout
