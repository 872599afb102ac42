#include "workers/rollout/environments/python_environment.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace sluice::rollout {
namespace {

using std::chrono::seconds;

StepResult Call(PythonEnvironment& env, const std::string& tool, const std::string& arguments) {
  Result<StepResult> step = env.Step(ToolCall{tool, arguments}, arguments, CancellationToken());
  EXPECT_TRUE(step.ok()) << step.status().ToString();
  return step.ok() ? *step : StepResult{};
}

TEST(StripCodeFenceTest, RemovesASurroundingFence) {
  EXPECT_EQ(StripCodeFence("```python\nprint(1)\n```"), "print(1)");
  EXPECT_EQ(StripCodeFence("  ```\nx = 1\ny = 2\n```  \n"), "x = 1\ny = 2");
  EXPECT_EQ(StripCodeFence("```python\nprint(2)"), "print(2)");  // Unclosed.
  EXPECT_EQ(StripCodeFence("print('```')"), "print('```')");
  EXPECT_EQ(StripCodeFence("\n  print(3)  \n"), "print(3)");
}

TEST(PythonEnvironmentTest, ResetIsEmpty) {
  PythonEnvironment env(seconds(10));
  Result<std::string> first = env.Reset(EnvironmentTask{}, CancellationToken());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "");
}

TEST(PythonEnvironmentTest, RunsTheProgramAndReturnsItsOutput) {
  PythonEnvironment env(seconds(10));
  const StepResult step = Call(env, "python", "```python\nprint(sum(range(10)))\n```");
  EXPECT_EQ(step.observation, "45\n");
  EXPECT_FALSE(step.done);
  EXPECT_FALSE(step.reward.has_value());
}

TEST(PythonEnvironmentTest, AFailingProgramShowsStderrAndTheExitCode) {
  PythonEnvironment env(seconds(10));
  const StepResult step = Call(env, "python", "print('before')\n1 / 0\n");
  EXPECT_EQ(step.observation.rfind("before\n", 0), 0u) << step.observation;
  EXPECT_NE(step.observation.find("ZeroDivisionError"), std::string::npos) << step.observation;
  EXPECT_EQ(step.observation.substr(step.observation.size() - 13), "[exit code 1]")
      << step.observation;

  EXPECT_EQ(Call(env, "python", "import sys\nsys.exit(3)").observation, "[exit code 3]");
}

TEST(PythonEnvironmentTest, NothingCarriesOverBetweenCalls) {
  PythonEnvironment env(seconds(10));
  EXPECT_EQ(Call(env, "python", "x = 5\nprint(x)").observation, "5\n");
  EXPECT_NE(Call(env, "python", "print(x)").observation.find("NameError"), std::string::npos);
}

TEST(PythonEnvironmentTest, TimesOutAtTheEnvironmentTimeout) {
  PythonEnvironment env(seconds(1));
  const auto start = std::chrono::steady_clock::now();
  const StepResult step =
      Call(env, "python", "import time\nprint('start', flush=True)\ntime.sleep(30)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_EQ(step.observation, "start\n[timed out]");
}

TEST(PythonEnvironmentTest, LimitsMemoryAndNetwork) {
  PythonEnvironment env(seconds(10));
  StepResult step = Call(env, "python", "x = bytearray(1 << 30)\nprint('allocated')");
  EXPECT_NE(step.observation.find("MemoryError"), std::string::npos) << step.observation;
  EXPECT_EQ(step.observation.find("allocated\n"), std::string::npos) << step.observation;

  step = Call(env, "python",
              "import socket\n"
              "try:\n"
              "    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
              "except OSError as e:\n"
              "    print('blocked', e.errno)\n");
  EXPECT_EQ(step.observation, "blocked 13\n");
}

TEST(PythonEnvironmentTest, TruncatesLongOutput) {
  PythonEnvironment env(seconds(10));
  const StepResult step = Call(env, "python", "print('é' * 10000)");
  const std::string marker = "\n[output truncated]";
  ASSERT_GT(step.observation.size(), marker.size());
  EXPECT_LE(step.observation.size(), kPythonObservationBytes + marker.size());
  EXPECT_EQ(step.observation.substr(step.observation.size() - marker.size()), marker);
  // Cut on a character boundary: the kept text is whole two-byte characters.
  EXPECT_EQ((step.observation.size() - marker.size()) % 2, 0u);
}

TEST(PythonEnvironmentTest, CompilesAndRunsCpp) {
  PythonEnvironment env(seconds(30));
  StepResult step = Call(env, "cpp",
                         "```cpp\n#include <cstdio>\nint main() { std::printf(\"%d\\n\", 6 * 7); "
                         "return 3; }\n```");
  EXPECT_EQ(step.observation, "42\n[exit code 3]");
  step = Call(env, "cpp", "int main() { return undefined_name; }");
  EXPECT_EQ(step.observation.rfind("compile error:\n", 0), 0u) << step.observation;
  EXPECT_NE(step.observation.find("undefined_name"), std::string::npos) << step.observation;
  // The compiled program has no network either.
  step = Call(env, "cpp",
              "#include <sys/socket.h>\n#include <cstdio>\n#include <cerrno>\n"
              "int main() { int s = socket(AF_INET, SOCK_STREAM, 0); "
              "std::printf(\"%d %d\\n\", s, errno); }");
  EXPECT_EQ(step.observation, "-1 13\n");
}

TEST(PythonEnvironmentTest, UnknownToolNamesTheAvailableOnes) {
  PythonEnvironment env(seconds(10));
  const StepResult step = Call(env, "calculator", "1+1");
  EXPECT_EQ(step.observation, "unknown tool 'calculator'; available: python, cpp");
  EXPECT_FALSE(step.done);
}

TEST(PythonEnvironmentTest, CancellationStopsARunningProgram) {
  PythonEnvironment env(seconds(30));
  CancellationSource source;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    source.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  Result<StepResult> step =
      env.Step(ToolCall{"python", "import time\ntime.sleep(30)"}, "", source.Token());
  canceller.join();
  EXPECT_EQ(step.status().code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

}  // namespace
}  // namespace sluice::rollout
