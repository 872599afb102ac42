#include "workers/rollout/rewards/code_exec_reward.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::rollout {
namespace {

using nlohmann::json;

std::unique_ptr<CodeExecReward> MakeCodeExec(const json& options = json::object()) {
  Result<std::unique_ptr<CodeExecReward>> reward = CodeExecReward::Create(options);
  EXPECT_TRUE(reward.ok()) << reward.status().ToString();
  return reward.ok() ? std::move(reward).value() : nullptr;
}

RewardOutcome ScoreWith(const CodeExecReward& reward, const std::string& response,
                        const json& row) {
  RewardInput input;
  input.response = response;
  input.row = &row;
  return reward.Score(input);
}

// Sum of two integers per test, one per line.
const json kSumRow = {{"tests", json::array({{{"input", "1 2\n"}, {"output", "3\n"}},
                                             {{"input", "10 -4\n"}, {"output", "6"}}})}};

TEST(ExtractProgramTest, TakesTheLastFenceForTheLanguage) {
  const std::string response =
      "First try:\n```python\nprint(1)\n```\nBetter:\n```python\nprint(2)\n```\n"
      "Example output:\n```text\n2\n```\n";
  EXPECT_EQ(ExtractProgram(response, CodeLanguage::kPython), "print(2)\n");
  EXPECT_EQ(ExtractProgram("```py\nx = 1\n```", CodeLanguage::kPython), "x = 1\n");
  EXPECT_EQ(ExtractProgram("```c++\nint main() {}\n```", CodeLanguage::kCpp), "int main() {}\n");
  EXPECT_EQ(ExtractProgram("```cpp\nint main() {}\n```", CodeLanguage::kCpp), "int main() {}\n");
}

TEST(ExtractProgramTest, FallsBackToAPlainFenceThenTheWholeResponse) {
  EXPECT_EQ(ExtractProgram("Here:\n```\nprint(3)\n```\ndone", CodeLanguage::kPython), "print(3)\n");
  EXPECT_EQ(ExtractProgram("print(4)", CodeLanguage::kPython), "print(4)");
  // An unclosed fence (a cut-off generation) still counts.
  EXPECT_EQ(ExtractProgram("```python\nprint(5)\n", CodeLanguage::kPython), "print(5)\n");
  // Indented fences and nested backticks inside a line are fine.
  EXPECT_EQ(ExtractProgram("  ```python\n  s = '```x'\n  ```\n", CodeLanguage::kPython),
            "  s = '```x'\n");
}

TEST(OutputMatchesTest, IgnoresTrailingWhitespaceOnly) {
  EXPECT_TRUE(OutputMatches("3\n", "3"));
  EXPECT_TRUE(OutputMatches("a b  \r\nc\t\n\n\n", "a b\nc"));
  EXPECT_FALSE(OutputMatches(" 3", "3"));
  EXPECT_FALSE(OutputMatches("a\n\nb", "a\nb"));
  EXPECT_FALSE(OutputMatches("", "3"));
  EXPECT_TRUE(OutputMatches("", "\n"));
}

TEST(CodeExecRewardTest, PythonPassesAllTests) {
  auto reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  EXPECT_EQ(reward->name(), "code-exec");
  const RewardOutcome outcome =
      ScoreWith(*reward,
                "Read two ints and print the sum.\n```python\na, b = map(int, input().split())\n"
                "print(a + b)\n```",
                kSumRow);
  EXPECT_FALSE(outcome.error) << outcome.detail;
  EXPECT_DOUBLE_EQ(outcome.score, 1.0);
  EXPECT_EQ(outcome.detail, "2/2 tests passed");
}

TEST(CodeExecRewardTest, PartialPassScoresTheFraction) {
  auto reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  // Right only when both numbers are positive.
  const RewardOutcome outcome = ScoreWith(
      *reward, "```python\nprint(sum(abs(int(x)) for x in input().split()))\n```", kSumRow);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.5);
  EXPECT_EQ(outcome.detail, "1/2 tests passed; test 2: wrong answer");
}

TEST(CodeExecRewardTest, FailingProgramScoresZero) {
  auto reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  RewardOutcome outcome = ScoreWith(*reward, "```python\nprint('no idea')\n```", kSumRow);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_EQ(outcome.detail, "0/2 tests passed; test 1: wrong answer");

  outcome = ScoreWith(*reward, "```python\nraise ValueError('bad input')\n```", kSumRow);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("runtime error (exit code 1): ValueError: bad input"),
            std::string::npos)
      << outcome.detail;
}

TEST(CodeExecRewardTest, InfiniteLoopTimesOut) {
  auto reward = MakeCodeExec({{"timeoutSeconds", 1}, {"cpuSeconds", 5}});
  ASSERT_NE(reward, nullptr);
  const json row = {{"tests", json::array({{{"input", ""}, {"output", "1"}}})}};
  RewardOutcome outcome =
      ScoreWith(*reward, "```python\nimport time\nwhile True: time.sleep(1)\n```", row);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("timeout"), std::string::npos) << outcome.detail;
  EXPECT_NE(outcome.detail.find("wall limit 1 s"), std::string::npos) << outcome.detail;

  // A busy loop hits the CPU limit first.
  reward = MakeCodeExec({{"timeoutSeconds", 20}, {"cpuSeconds", 1}});
  ASSERT_NE(reward, nullptr);
  outcome = ScoreWith(*reward, "```python\nwhile True: pass\n```", row);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("timeout (CPU limit 1 s)"), std::string::npos) << outcome.detail;
}

TEST(CodeExecRewardTest, MemoryLimitFailsTheTest) {
  auto reward = MakeCodeExec({{"memoryMiB", 256}});
  ASSERT_NE(reward, nullptr);
  const json row = {{"tests", json::array({{{"input", ""}, {"output", "2147483648"}}})}};
  const RewardOutcome outcome =
      ScoreWith(*reward, "```python\nx = bytearray(2 << 30)\nprint(len(x))\n```", row);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("MemoryError"), std::string::npos) << outcome.detail;
}

TEST(CodeExecRewardTest, NetworkIsBlocked) {
  auto reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  // The expected output is what the program prints when it can open an Internet socket.
  const json row = {{"tests", json::array({{{"input", ""}, {"output", "online"}}})}};
  const RewardOutcome outcome =
      ScoreWith(*reward,
                "```python\nimport socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
                "print('online')\n```",
                row);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("PermissionError"), std::string::npos) << outcome.detail;
}

TEST(CodeExecRewardTest, HostileAnswersScoreZeroAndTheNextAnswerStillScores) {
  std::unique_ptr<CodeExecReward> reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  // Each tries to get the right output by a way out of the sandbox: the worker's token, a
  // fork bomb, or a sleeper that outlives the test in its own session.
  const std::string hostile[] = {
      "```python\nprint(open('/var/run/secrets/kubernetes.io/serviceaccount/token').read())\n```",
      "```python\nimport os\nwhile True:\n    os.fork()\n```",
      "```python\nimport os, subprocess\nsubprocess.Popen(['sleep', '30'], "
      "start_new_session=True)\nos.kill(os.getppid(), 9)\n```",
  };
  for (const std::string& response : hostile) {
    EXPECT_EQ(ScoreWith(*reward, response, kSumRow).score, 0.0) << response;
  }
  const RewardOutcome next =
      ScoreWith(*reward, "```python\na, b = map(int, input().split())\nprint(a + b)\n```", kSumRow);
  EXPECT_EQ(next.score, 1.0) << next.detail;
}

TEST(CodeExecRewardTest, CppCompilesOnceAndPasses) {
  auto reward = MakeCodeExec({{"language", "cpp"}});
  ASSERT_NE(reward, nullptr);
  const RewardOutcome outcome = ScoreWith(*reward,
                                          "```cpp\n#include <iostream>\nint main() {\n"
                                          "  long a, b;\n  std::cin >> a >> b;\n"
                                          "  std::cout << a + b << \"\\n\";\n}\n```",
                                          kSumRow);
  EXPECT_FALSE(outcome.error) << outcome.detail;
  EXPECT_DOUBLE_EQ(outcome.score, 1.0) << outcome.detail;
}

TEST(CodeExecRewardTest, RowLanguageOverridesTheOption) {
  auto reward = MakeCodeExec();  // python by default
  ASSERT_NE(reward, nullptr);
  json row = kSumRow;
  row["language"] = "cpp";
  const RewardOutcome outcome = ScoreWith(
      *reward,
      "```c++\n#include <cstdio>\nint main() { long a, b; "
      "if (std::scanf(\"%ld %ld\", &a, &b) != 2) return 1; std::printf(\"%ld\\n\", a + b); }\n```",
      row);
  EXPECT_DOUBLE_EQ(outcome.score, 1.0) << outcome.detail;

  row["language"] = "cobol";
  const RewardOutcome bad = ScoreWith(*reward, "x", row);
  EXPECT_TRUE(bad.error);
  EXPECT_NE(bad.detail.find("row.language"), std::string::npos) << bad.detail;
}

TEST(CodeExecRewardTest, CppCompileErrorScoresZero) {
  auto reward = MakeCodeExec({{"language", "cpp"}});
  ASSERT_NE(reward, nullptr);
  const RewardOutcome outcome =
      ScoreWith(*reward, "```cpp\nint main() { return undefined_name; }\n```", kSumRow);
  EXPECT_FALSE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("compile error"), std::string::npos) << outcome.detail;
  EXPECT_NE(outcome.detail.find("undefined_name"), std::string::npos) << outcome.detail;
}

TEST(CodeExecRewardTest, CppCrashScoresZero) {
  auto reward = MakeCodeExec({{"language", "cpp"}});
  ASSERT_NE(reward, nullptr);
  const RewardOutcome outcome =
      ScoreWith(*reward, "```cpp\n#include <cstdlib>\nint main() { std::abort(); }\n```", kSumRow);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("crashed (signal 6)"), std::string::npos) << outcome.detail;
}

TEST(CodeExecRewardTest, RowWithoutTestsIsAnError) {
  auto reward = MakeCodeExec();
  ASSERT_NE(reward, nullptr);
  RewardOutcome outcome = ScoreWith(*reward, "print(1)", json::object());
  EXPECT_TRUE(outcome.error);
  EXPECT_DOUBLE_EQ(outcome.score, 0.0);
  EXPECT_NE(outcome.detail.find("no test cases"), std::string::npos) << outcome.detail;

  outcome = ScoreWith(*reward, "print(1)", json{{"tests", json::array()}});
  EXPECT_TRUE(outcome.error);

  outcome = ScoreWith(*reward, "print(1)", json{{"tests", json::array({{{"input", "1"}}})}});
  EXPECT_TRUE(outcome.error);
  EXPECT_NE(outcome.detail.find("row.tests[0].output"), std::string::npos) << outcome.detail;

  RewardInput no_row;
  no_row.response = "print(1)";
  EXPECT_TRUE(reward->Score(no_row).error);
}

TEST(CodeExecRewardTest, ParsesOptions) {
  auto reward = MakeCodeExec(
      {{"language", "cpp"}, {"timeoutSeconds", 2.5}, {"cpuSeconds", 1}, {"memoryMiB", 128}});
  ASSERT_NE(reward, nullptr);
  EXPECT_EQ(reward->options().language, CodeLanguage::kCpp);
  EXPECT_DOUBLE_EQ(reward->options().timeout_seconds, 2.5);
  EXPECT_DOUBLE_EQ(reward->options().cpu_seconds, 1);
  EXPECT_EQ(reward->options().memory_mib, 128);

  reward = MakeCodeExec(json());  // null: defaults
  ASSERT_NE(reward, nullptr);
  EXPECT_EQ(reward->options().language, CodeLanguage::kPython);
  EXPECT_DOUBLE_EQ(reward->options().timeout_seconds, 10);
  EXPECT_DOUBLE_EQ(reward->options().cpu_seconds, 5);
  EXPECT_EQ(reward->options().memory_mib, 512);
}

TEST(CodeExecRewardTest, BadOptionsNameTheField) {
  const auto field_of = [](const json& options) {
    return CodeExecReward::Create(options).status().field();
  };
  EXPECT_EQ(field_of({{"language", "rust"}}), "reward.options.language");
  EXPECT_EQ(field_of({{"language", 3}}), "reward.options.language");
  EXPECT_EQ(field_of({{"timeoutSeconds", 0}}), "reward.options.timeoutSeconds");
  EXPECT_EQ(field_of({{"timeoutSeconds", "10"}}), "reward.options.timeoutSeconds");
  EXPECT_EQ(field_of({{"cpuSeconds", -1}}), "reward.options.cpuSeconds");
  EXPECT_EQ(field_of({{"memoryMiB", 1.5}}), "reward.options.memoryMiB");
  EXPECT_EQ(field_of({{"memoryMiB", 0}}), "reward.options.memoryMiB");
  EXPECT_EQ(field_of({{"timeout", 10}}), "reward.options.timeout");
  EXPECT_EQ(field_of(json::array()), "reward.options");
  EXPECT_EQ(CodeExecReward::Create({{"cpuSeconds", -1}}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::rollout
