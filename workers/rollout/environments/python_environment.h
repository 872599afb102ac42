// PythonEnvironment: the built-in code-execution environment (spec.workflow.environment.builtin:
// python). Two tools:
//   "python"  the arguments are a Python program (a surrounding ``` fence is stripped), run with
//             python3;
//   "cpp"     the arguments are a C++17 program, compiled with g++ -O1 (a compile error is the
//             observation "compile error:" plus g++'s messages) and then run.
// Both run in the sandbox (sandbox/sandboxed_process.h: no network, a fresh directory, 256 MiB of
// address space (2 GiB for the compiler), min(5 s, timeout) of CPU, the environment's per-call
// timeout as the wall limit).
//
// The observation is the program's stdout, then its stderr (a traceback), cut at
// kPythonObservationBytes, then "[exit code N]", "[timed out]", "[CPU limit exceeded]" or
// "[killed by signal N]" on a line of its own when the program did not exit 0. Each call is a
// fresh interpreter: nothing carries over between calls.
//
// The environment never ends the episode and never scores it (the workflow's reward does).
// Cancellation kills a running program; Step then returns Cancelled.
//
// Thread safety: an instance belongs to one episode.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "workers/rollout/environments/environment.h"

namespace sluice::rollout {

inline constexpr char kPythonToolName[] = "python";
inline constexpr char kCppToolName[] = "cpp";
// The most program output one observation carries (before the status line).
inline constexpr size_t kPythonObservationBytes = 4096;

// The program in a call's arguments: trimmed, without a surrounding ``` fence (```python too).
std::string StripCodeFence(std::string_view arguments);

class PythonEnvironment final : public Environment {
 public:
  // `timeout` is the wall limit of one call (EnvironmentSpec::timeout); at least one second.
  explicit PythonEnvironment(std::chrono::seconds timeout);

  // Returns "" (the task needs no introduction from the environment).
  Result<std::string> Reset(const EnvironmentTask& task, const CancellationToken& cancel) override;
  // Tool "python": the program's output as above. Another tool: "unknown tool 'x'; available:
  // python". Errors: Cancelled when `cancel` fired, Internal when the sandbox itself failed.
  Result<StepResult> Step(const ToolCall& call, const std::string& text,
                          const CancellationToken& cancel) override;

 private:
  std::chrono::seconds timeout_;
};

}  // namespace sluice::rollout
