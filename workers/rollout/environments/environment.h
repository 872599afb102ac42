// Environment: what a multi-turn agent acts in. An episode resets it with the task, then steps it
// with each tool call the model makes; every observation is appended to the conversation (as a
// "tool" message, loss mask 0) before the model's next turn.
//
// The protocol (docs/rollout.md, "Environment protocol") is HTTP so users can bring any
// environment as a container:
//   POST /reset {"task": {"task_id", "prompt", "answer", "row"}}
//        -> 200 {"observation": str (may be empty), "session": str (optional)}
//   POST /step  {"session": str, "tool": str, "arguments": str, "text": str (the whole turn)}
//        -> 200 {"observation": str, "reward": number (optional), "done": bool (optional)}
// HttpEnvironment speaks it; CalculatorEnvironment and PythonEnvironment are built in and run in
// the worker's process (spec.workflow.environment.builtin).
//
// Thread safety: an Environment instance belongs to one episode (one thread); MakeEnvironment may
// be called from many threads at once.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::rollout {

// What /reset receives: the leased task.
struct EnvironmentTask {
  std::string task_id;
  std::string prompt;
  std::string answer;
  nlohmann::json row = nlohmann::json::object();
};

// One tool call parsed from the model's turn (tool_call_format.h).
struct ToolCall {
  std::string name;       // "calculator", "python", ...
  std::string arguments;  // Everything after the name, trimmed.
};

struct StepResult {
  std::string observation;
  std::optional<double> reward;  // When the environment scores the episode.
  bool done = false;             // The environment ended the episode.
};

class Environment {
 public:
  virtual ~Environment() = default;
  // The initial observation (may be empty). Errors: Unavailable/DeadlineExceeded for an
  // unreachable or slow environment, InvalidArgument for a malformed reply (naming the field).
  virtual Result<std::string> Reset(const EnvironmentTask& task,
                                    const CancellationToken& cancel) = 0;
  // Applies one tool call; `text` is the model's whole turn. A tool that fails (bad expression,
  // program error) is an observation describing the failure, not an error.
  virtual Result<StepResult> Step(const ToolCall& call, const std::string& text,
                                  const CancellationToken& cancel) = 0;
};

// Options shared by every environment of one workflow (spec.workflow.environment).
struct EnvironmentSpec {
  std::string builtin;               // "calculator" or "python"; or
  std::string url;                   // an HTTP environment's base URL.
  std::chrono::seconds timeout{30};  // Per call.
};

// Parses spec.workflow.environment ({builtin | url, timeoutSeconds}). InvalidArgument naming the
// field ("workflow.environment.builtin") otherwise.
Result<EnvironmentSpec> ParseEnvironmentSpec(const nlohmann::json& json);

// A fresh environment for one episode. `bearer_token` (may be empty) is sent to HTTP
// environments as "Authorization: Bearer ...".
Result<std::unique_ptr<Environment>> MakeEnvironment(const EnvironmentSpec& spec,
                                                     const std::string& bearer_token);

}  // namespace sluice::rollout
