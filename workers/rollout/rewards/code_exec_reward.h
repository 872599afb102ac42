// CodeExecReward ("code-exec"): the fraction of the row's test cases the program in the response
// passes, each run in the sandbox (sandbox/sandboxed_process.h).
//
// The program is the response's last fenced code block tagged for the language (```python,
// ```py; ```cpp, ```c++), else its last untagged fence (```), else the whole response. The row
// holds the tests, {"tests": [{"input": str, "output": str}, ...]}: input is the program's stdin
// (missing means empty) and output its expected stdout, compared after dropping trailing
// whitespace on every line and trailing blank lines. row["language"] ("python" or "cpp")
// overrides the option.
//
// Python runs as `python3 solution.py` once per test. C++ is compiled once (g++ -O1 -std=c++17,
// wall 60 s, CPU 30 s, 2 GiB), the binary handed to each test's run as an executable file. A
// compile error, crash, nonzero exit, timeout or wrong output scores that test 0, and the detail
// names the first failure ("1/2 tests passed; test 2: timeout (CPU limit 5 s)"). A row without
// tests, an unknown row language or a sandbox failure sets error (score 0).
//
// Cost: up to tests × timeoutSeconds of wall time per Score (the tests run one after another).
//
// Ownership and thread safety: immutable after Create; Score may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {

enum class CodeLanguage { kPython, kCpp };

// "python" or "cpp" (also "py", "python3", "c++"); nullopt otherwise.
std::optional<CodeLanguage> ParseCodeLanguage(std::string_view name);

// The program in a model's response for `language` (the rule in the header comment).
std::string ExtractProgram(std::string_view response, CodeLanguage language);

// Whether a program's stdout matches the expected output, ignoring trailing whitespace on each
// line and trailing blank lines.
bool OutputMatches(std::string_view actual, std::string_view expected);

class CodeExecReward final : public Reward {
 public:
  struct Options {
    CodeLanguage language = CodeLanguage::kPython;
    double timeout_seconds = 10;  // Wall time per test.
    double cpu_seconds = 5;       // CPU time per test.
    int64_t memory_mib = 512;     // Address space per test.
  };

  explicit CodeExecReward(Options options) : options_(options) {}

  // Reads spec.reward.options: {"language": "python" | "cpp", "timeoutSeconds": number > 0,
  // "cpuSeconds": number > 0, "memoryMiB": integer > 0}; null means all defaults.
  // InvalidArgument naming the key ("reward.options.timeoutSeconds") for a bad value or an
  // unknown key.
  static Result<std::unique_ptr<CodeExecReward>> Create(const nlohmann::json& options);

  std::string_view name() const override { return "code-exec"; }
  RewardOutcome Score(const RewardInput& input) const override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::rollout
