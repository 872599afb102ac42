#include "workers/rollout/rewards/code_exec_reward.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "common/json/options_reader.h"
#include "workers/rollout/sandbox/sandboxed_process.h"

namespace sluice::rollout {

namespace {

using nlohmann::json;

constexpr char kPythonSource[] = "solution.py";
constexpr char kCppSource[] = "solution.cpp";
constexpr char kCppBinary[] = "solution";
// Compiling is heavier than running and is done once per response.
constexpr double kCompileWallSeconds = 60;
constexpr double kCompileCpuSeconds = 30;
constexpr int64_t kCompileMemoryBytes = int64_t{2} << 30;
constexpr int64_t kBinaryMaxBytes = int64_t{64} << 20;
// Output kept per stream beyond the expected output's size: enough to tell a mismatch apart and
// to keep the end of a traceback.
constexpr int64_t kOutputSlackBytes = int64_t{64} << 10;
constexpr size_t kExcerptBytes = 200;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// Each line without trailing whitespace, then without trailing blank lines.
std::string NormaliseOutput(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
    out.append(line);
    out.push_back('\n');
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  }
  return std::string(TrimRight(out));
}

// The last non-blank line of a program's stderr (a traceback's exception line), shortened.
std::string LastLine(std::string_view text) {
  text = TrimRight(text);
  const size_t newline = text.rfind('\n');
  std::string_view line =
      StripAsciiSpace(newline == std::string_view::npos ? text : text.substr(newline + 1));
  if (line.size() > kExcerptBytes) return std::string(line.substr(0, kExcerptBytes)) + "...";
  return std::string(line);
}

std::string FormatSeconds(double seconds) {
  std::string s = std::to_string(seconds);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " s";
}

// Why a run failed, or nullopt when it exited 0.
std::optional<std::string> RunFailure(const SandboxResult& run, const SandboxLimits& limits) {
  if (run.timed_out) return "timeout (wall limit " + FormatSeconds(limits.wall_seconds) + ")";
  if (run.cpu_exceeded) return "timeout (CPU limit " + FormatSeconds(limits.cpu_seconds) + ")";
  if (run.signal != 0) {
    std::string why = "crashed (signal " + std::to_string(run.signal) + ")";
    const std::string last = LastLine(run.stderr_data);
    return last.empty() ? why : why + ": " + last;
  }
  if (run.exit_code != 0) {
    std::string why = "runtime error (exit code " + std::to_string(run.exit_code) + ")";
    const std::string last = LastLine(run.stderr_data);
    return last.empty() ? why : why + ": " + last;
  }
  return std::nullopt;
}

struct TestCase {
  std::string input;
  std::string output;
};

// The row's tests; an error message (naming the field) when they are missing or malformed.
Result<std::vector<TestCase>> ParseTests(const json* row) {
  if (row == nullptr || !row->is_object() || !row->contains("tests")) {
    return Status::InvalidArgument("the row has no test cases", "row.tests");
  }
  const json& tests = (*row)["tests"];
  if (!tests.is_array()) {
    return Status::InvalidArgument("must be an array, got " + std::string(tests.type_name()),
                                   "row.tests");
  }
  if (tests.empty()) return Status::InvalidArgument("the row has no test cases", "row.tests");
  std::vector<TestCase> parsed;
  for (size_t i = 0; i < tests.size(); ++i) {
    const std::string field = "row.tests[" + std::to_string(i) + "]";
    const json& test = tests[i];
    if (!test.is_object()) return Status::InvalidArgument("must be an object", field);
    TestCase tc;
    if (auto it = test.find("input"); it != test.end() && !it->is_null()) {
      if (!it->is_string()) return Status::InvalidArgument("must be a string", field + ".input");
      tc.input = it->get<std::string>();
    }
    auto it = test.find("output");
    if (it == test.end() || !it->is_string()) {
      return Status::InvalidArgument("must be a string", field + ".output");
    }
    tc.output = it->get<std::string>();
    parsed.push_back(std::move(tc));
  }
  return parsed;
}

RewardOutcome ErrorOutcome(std::string detail) {
  RewardOutcome outcome;
  outcome.error = true;
  outcome.detail = std::move(detail);
  return outcome;
}

// Reads `key` into `out` when present; it must be a finite number above 0.
Status PositiveNumber(JsonOptions& reader, std::string_view key, double& out) {
  SLUICE_RETURN_IF_ERROR(reader.Double(key, out));
  if (!(out > 0) || !std::isfinite(out)) {
    return Status::InvalidArgument("must be greater than 0", std::string(key));
  }
  return Status::Ok();
}

}  // namespace

std::optional<CodeLanguage> ParseCodeLanguage(std::string_view name) {
  if (name == "python" || name == "py" || name == "python3") return CodeLanguage::kPython;
  if (name == "cpp" || name == "c++") return CodeLanguage::kCpp;
  return std::nullopt;
}

std::string ExtractProgram(std::string_view response, CodeLanguage language) {
  struct Block {
    std::string tag;  // The info string's first word, lower-cased.
    std::string body;
  };
  std::vector<Block> blocks;
  bool inside = false;
  std::string_view rest = response;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    const std::string_view trimmed = StripAsciiSpace(line);
    const bool fence = trimmed.substr(0, 3) == "```";
    if (!inside && fence) {
      std::string_view info = StripAsciiSpace(trimmed.substr(3));
      info = info.substr(0, info.find_first_of(" \t{"));
      std::string tag(info);
      std::transform(tag.begin(), tag.end(), tag.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      blocks.push_back({std::move(tag), ""});
      inside = true;
    } else if (inside && fence && StripAsciiSpace(trimmed.substr(3)).empty()) {
      inside = false;
    } else if (inside) {
      blocks.back().body.append(line);
      blocks.back().body.push_back('\n');
    }
  }
  // An unclosed last fence (a cut-off generation) still counts as a block.
  const Block* tagged = nullptr;
  const Block* untagged = nullptr;
  for (const Block& block : blocks) {
    if (block.tag.empty()) {
      untagged = &block;
    } else if (ParseCodeLanguage(block.tag) == language ||
               (language == CodeLanguage::kCpp && (block.tag == "cc" || block.tag == "cxx"))) {
      tagged = &block;
    }
  }
  if (tagged != nullptr) return tagged->body;
  if (untagged != nullptr) return untagged->body;
  return std::string(response);
}

bool OutputMatches(std::string_view actual, std::string_view expected) {
  return NormaliseOutput(actual) == NormaliseOutput(expected);
}

Result<std::unique_ptr<CodeExecReward>> CodeExecReward::Create(const json& options) {
  Options parsed;
  const auto read = [&]() -> Status {
    SLUICE_ASSIGN_OR_RETURN(JsonOptions reader, JsonOptions::Create(options));
    std::string language;
    SLUICE_RETURN_IF_ERROR(reader.String("language", language));
    if (options.is_object() && options.contains("language")) {
      const std::optional<CodeLanguage> parsed_language = ParseCodeLanguage(language);
      if (!parsed_language) {
        return Status::InvalidArgument("must be \"python\" or \"cpp\"", "language");
      }
      parsed.language = *parsed_language;
    }
    SLUICE_RETURN_IF_ERROR(PositiveNumber(reader, "timeoutSeconds", parsed.timeout_seconds));
    SLUICE_RETURN_IF_ERROR(PositiveNumber(reader, "cpuSeconds", parsed.cpu_seconds));
    SLUICE_RETURN_IF_ERROR(reader.Int("memoryMiB", parsed.memory_mib));
    if (parsed.memory_mib <= 0 || parsed.memory_mib > (int64_t{1} << 30)) {
      return Status::InvalidArgument("must be a positive integer (MiB)", "memoryMiB");
    }
    return reader.RejectUnknown();
  };
  SLUICE_RETURN_IF_ERROR(PrefixField(read(), "reward.options"));
  return std::make_unique<CodeExecReward>(parsed);
}

RewardOutcome CodeExecReward::Score(const RewardInput& input) const {
  Result<std::vector<TestCase>> tests = ParseTests(input.row);
  if (!tests.ok()) return ErrorOutcome(tests.status().field() + ": " + tests.status().message());

  CodeLanguage language = options_.language;
  if (input.row->contains("language") && !(*input.row)["language"].is_null()) {
    const json& value = (*input.row)["language"];
    std::optional<CodeLanguage> parsed;
    if (value.is_string()) parsed = ParseCodeLanguage(value.get<std::string>());
    if (!parsed) return ErrorOutcome("row.language: must be \"python\" or \"cpp\"");
    language = *parsed;
  }

  const std::string program = ExtractProgram(input.response, language);
  const size_t total = tests->size();
  const auto summary = [total](size_t passed, const std::string& first_failure) {
    RewardOutcome outcome;
    outcome.score = static_cast<double>(passed) / static_cast<double>(total);
    outcome.detail = std::to_string(passed) + "/" + std::to_string(total) + " tests passed";
    if (!first_failure.empty()) outcome.detail += "; " + first_failure;
    return outcome;
  };
  if (StripAsciiSpace(program).empty()) return summary(0, "no program in the response");

  SandboxSpec run;
  run.limits.wall_seconds = options_.timeout_seconds;
  run.limits.cpu_seconds = options_.cpu_seconds;
  run.limits.memory_bytes = options_.memory_mib << 20;
  if (language == CodeLanguage::kPython) {
    run.argv = {"python3", kPythonSource};
    run.files = {{kPythonSource, program}};
  } else {
    SandboxSpec compile;
    compile.argv = {"g++", "-O1", "-std=c++17", "-o", kCppBinary, kCppSource};
    compile.files = {{kCppSource, program}};
    compile.collect_files = {kCppBinary};
    compile.limits.wall_seconds = kCompileWallSeconds;
    compile.limits.cpu_seconds = kCompileCpuSeconds;
    compile.limits.memory_bytes = kCompileMemoryBytes;
    compile.limits.max_file_bytes = kBinaryMaxBytes;
    Result<SandboxResult> compiled = RunSandboxed(compile);
    if (!compiled.ok()) return ErrorOutcome("sandbox: " + compiled.status().ToString());
    if (std::optional<std::string> why = RunFailure(*compiled, compile.limits)) {
      // g++'s first "error:" line says most; its last line is only "compilation terminated".
      std::string_view log = StripAsciiSpace(compiled->stderr_data);
      const size_t error_at = log.find("error:");
      if (compiled->exit_code > 0 && error_at != std::string_view::npos) {
        log = log.substr(error_at);
        *why = std::string(log.substr(0, std::min(log.find('\n'), kExcerptBytes)));
      }
      return summary(0, "compile error: " + *why);
    }
    if (compiled->files.empty()) {
      return ErrorOutcome("compile produced no binary (larger than " +
                          std::to_string(kBinaryMaxBytes >> 20) + " MiB?)");
    }
    run.argv = {std::string("./") + kCppBinary};
    run.files = {{kCppBinary, std::move(compiled->files[0].second)}};
    run.executable_files = {kCppBinary};
  }

  size_t passed = 0;
  std::string first_failure;
  for (size_t i = 0; i < total; ++i) {
    const TestCase& test = (*tests)[i];
    run.stdin_data = test.input;
    run.limits.max_output_bytes = static_cast<int64_t>(test.output.size()) + kOutputSlackBytes;
    Result<SandboxResult> result = RunSandboxed(run);
    if (!result.ok()) return ErrorOutcome("sandbox: " + result.status().ToString());
    std::optional<std::string> why = RunFailure(*result, run.limits);
    if (!why && !OutputMatches(result->stdout_data, test.output)) why = "wrong answer";
    if (!why) {
      ++passed;
    } else if (first_failure.empty()) {
      first_failure = "test " + std::to_string(i + 1) + ": " + *why;
    }
  }
  return summary(passed, first_failure);
}

}  // namespace sluice::rollout
