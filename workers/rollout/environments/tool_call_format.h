// ToolCallFormat: how tool calls and final answers are marked in a model's text
// (spec.workflow.toolCall). The defaults:
//   <tool>calculator 12*(3+4)</tool>     a call of tool "calculator" with arguments "12*(3+4)"
//   <answer>84</answer>                  the final answer
// A turn whose text has a complete call (opening and closing marker) is a tool call: the first
// one counts, and the name is the first whitespace-delimited word inside. A turn without one is the
// final answer: the text between the answer markers when present, else the whole turn, trimmed.
//
// Thread safety: values and pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "workers/rollout/environments/environment.h"

namespace sluice::rollout {

struct ToolCallFormat {
  std::string call_open = "<tool>";
  std::string call_close = "</tool>";
  std::string answer_open = "<answer>";
  std::string answer_close = "</answer>";
};

// From {"callOpen", "callClose", "answerOpen", "answerClose"} (each optional, non-empty).
// InvalidArgument naming the field ("workflow.toolCall.callOpen").
Result<ToolCallFormat> ParseToolCallFormat(const nlohmann::json& json);

// The first complete tool call in `text`, if any.
std::optional<ToolCall> FindToolCall(const ToolCallFormat& format, std::string_view text);

// The final answer in `text` (see above).
std::string ExtractFinalAnswer(const ToolCallFormat& format, std::string_view text);

// The text of a call of tool `name` with `arguments` ("<tool>calculator 6*7</tool>" with the
// defaults), which FindToolCall reads back as {name, arguments} when `name` has no whitespace and
// neither contains the closing marker. What a trainer writes for a model turn it supervises.
std::string FormatToolCall(const ToolCallFormat& format, std::string_view name,
                           std::string_view arguments);

// `answer` between the answer markers ("<answer>42</answer>" with the defaults), which
// ExtractFinalAnswer reads back as `answer` trimmed when it contains no closing marker.
std::string FormatFinalAnswer(const ToolCallFormat& format, std::string_view answer);

}  // namespace sluice::rollout
