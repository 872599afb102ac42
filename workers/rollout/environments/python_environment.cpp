#include "workers/rollout/environments/python_environment.h"

#include <algorithm>
#include <string>

#include "common/ascii.h"
#include "workers/rollout/sandbox/sandboxed_process.h"

namespace sluice::rollout {

namespace {

constexpr char kProgramFile[] = "program.py";
constexpr char kCppSource[] = "program.cpp";
constexpr char kCppBinary[] = "program";
constexpr int64_t kCompileMemoryBytes = int64_t{2} << 30;
constexpr int64_t kBinaryMaxBytes = int64_t{64} << 20;
constexpr double kCpuSeconds = 5;
constexpr int64_t kMemoryBytes = int64_t{256} << 20;
// Enough of each stream to fill an observation; the rest is dropped by the sandbox.
constexpr int64_t kStreamBytes = 2 * kPythonObservationBytes;

// At most `max_bytes` of `text`, not splitting a UTF-8 sequence.
std::string_view CutUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the sequence that would be split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

std::string StatusLine(const SandboxResult& run) {
  if (run.timed_out) return "[timed out]";
  if (run.cpu_exceeded) return "[CPU limit exceeded]";
  if (run.signal != 0) return "[killed by signal " + std::to_string(run.signal) + "]";
  if (run.exit_code != 0) return "[exit code " + std::to_string(run.exit_code) + "]";
  return "";
}

}  // namespace

std::string StripCodeFence(std::string_view arguments) {
  std::string_view program = StripAsciiSpace(arguments);
  if (program.substr(0, 3) != "```") return std::string(program);
  // The opening fence's line (with its info string, "```python") goes; so does a closing fence.
  const size_t newline = program.find('\n');
  program = newline == std::string_view::npos ? std::string_view() : program.substr(newline + 1);
  if (program.size() >= 3 && program.substr(program.size() - 3) == "```") {
    program.remove_suffix(3);
  }
  return std::string(StripAsciiSpace(program));
}

PythonEnvironment::PythonEnvironment(std::chrono::seconds timeout)
    : timeout_(std::max(timeout, std::chrono::seconds(1))) {}

Result<std::string> PythonEnvironment::Reset(const EnvironmentTask& /*task*/,
                                             const CancellationToken& /*cancel*/) {
  return std::string();
}

Result<StepResult> PythonEnvironment::Step(const ToolCall& call, const std::string& /*text*/,
                                           const CancellationToken& cancel) {
  StepResult result;
  if (call.name != kPythonToolName && call.name != kCppToolName) {
    // The name is the model's text: cap it so a runaway "name" cannot flood the conversation.
    result.observation = "unknown tool '" + call.name.substr(0, 64) +
                         "'; available: " + std::string(kPythonToolName) + ", " +
                         std::string(kCppToolName);
    return result;
  }
  SandboxSpec spec;
  if (call.name == kPythonToolName) {
    spec.argv = {"python3", kProgramFile};
    spec.files = {{kProgramFile, StripCodeFence(call.arguments)}};
  } else {
    SandboxSpec compile;
    compile.argv = {"g++", "-O1", "-std=c++17", "-o", kCppBinary, kCppSource};
    compile.files = {{kCppSource, StripCodeFence(call.arguments)}};
    compile.collect_files = {kCppBinary};
    compile.limits.wall_seconds = static_cast<double>(timeout_.count());
    compile.limits.cpu_seconds = static_cast<double>(timeout_.count());
    compile.limits.memory_bytes = kCompileMemoryBytes;
    compile.limits.max_file_bytes = kBinaryMaxBytes;
    compile.limits.max_output_bytes = kStreamBytes;
    compile.cancel = cancel;
    SLUICE_ASSIGN_OR_RETURN(SandboxResult compiled, RunSandboxed(compile));
    if (!compiled.ok() || compiled.files.empty()) {
      std::string log = compiled.stderr_data;
      if (log.size() > kPythonObservationBytes) {
        log = std::string(CutUtf8(log, kPythonObservationBytes)) + "\n[output truncated]";
      }
      result.observation = "compile error:\n" + log;
      if (const std::string status = StatusLine(compiled); !status.empty()) {
        if (!result.observation.empty() && result.observation.back() != '\n') {
          result.observation += '\n';
        }
        result.observation += status;
      }
      return result;
    }
    spec.argv = {std::string("./") + kCppBinary};
    spec.files = {{kCppBinary, std::move(compiled.files[0].second)}};
    spec.executable_files = {kCppBinary};
  }
  spec.limits.wall_seconds = static_cast<double>(timeout_.count());
  spec.limits.cpu_seconds = std::min(kCpuSeconds, spec.limits.wall_seconds);
  spec.limits.memory_bytes = kMemoryBytes;
  spec.limits.max_output_bytes = kStreamBytes;
  spec.cancel = cancel;
  SLUICE_ASSIGN_OR_RETURN(SandboxResult run, RunSandboxed(spec));

  std::string output = run.stdout_data;
  if (!run.stderr_data.empty()) {
    if (!output.empty() && output.back() != '\n') output += '\n';
    output += run.stderr_data;
  }
  if (output.size() > kPythonObservationBytes) {
    output = std::string(CutUtf8(output, kPythonObservationBytes)) + "\n[output truncated]";
  }
  if (const std::string status = StatusLine(run); !status.empty()) {
    if (!output.empty() && output.back() != '\n') output += '\n';
    output += status;
  }
  result.observation = std::move(output);
  return result;
}

}  // namespace sluice::rollout
