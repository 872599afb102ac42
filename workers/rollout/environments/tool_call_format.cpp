#include "workers/rollout/environments/tool_call_format.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/ascii.h"

namespace sluice::rollout {

namespace {

constexpr std::string_view kFieldPrefix = "workflow.toolCall";
constexpr std::string_view kSpaces = " \t\n\r\f\v";

// The text between the first `open` and the first `close` after it; nullopt unless both occur.
std::optional<std::string_view> Between(std::string_view text, std::string_view open,
                                        std::string_view close) {
  const size_t open_at = text.find(open);
  if (open_at == std::string_view::npos) return std::nullopt;
  const size_t inner = open_at + open.size();
  const size_t close_at = text.find(close, inner);
  if (close_at == std::string_view::npos) return std::nullopt;
  return text.substr(inner, close_at - inner);
}

}  // namespace

Result<ToolCallFormat> ParseToolCallFormat(const nlohmann::json& json) {
  ToolCallFormat format;
  if (json.is_null()) return format;  // The whole object is optional.
  if (!json.is_object()) {
    return Status::InvalidArgument("must be a JSON object, got " + std::string(json.type_name()),
                                   std::string(kFieldPrefix));
  }
  const std::array<std::pair<std::string_view, std::string*>, 4> fields = {{
      {"callOpen", &format.call_open},
      {"callClose", &format.call_close},
      {"answerOpen", &format.answer_open},
      {"answerClose", &format.answer_close},
  }};
  for (const auto& [key, value] : json.items()) {
    const std::string field = std::string(kFieldPrefix) + "." + key;
    std::string* target = nullptr;
    for (const auto& [name, out] : fields) {
      if (key == name) target = out;
    }
    if (target == nullptr) {
      return Status::InvalidArgument(
          "unknown field; expected callOpen, callClose, answerOpen or answerClose", field);
    }
    if (value.is_null()) continue;  // Unset: the default.
    if (!value.is_string()) {
      return Status::InvalidArgument("must be a string, got " + std::string(value.type_name()),
                                     field);
    }
    // An empty marker would match at every position, so every turn would be a call.
    if (value.get_ref<const std::string&>().empty()) {
      return Status::InvalidArgument("must not be empty", field);
    }
    *target = value.get<std::string>();
  }
  return format;
}

std::optional<ToolCall> FindToolCall(const ToolCallFormat& format, std::string_view text) {
  // Only the first opening marker is considered: text after it up to the first closing marker is
  // the call. A later complete call cannot exist without that closing marker, so this is also
  // the first complete call.
  std::optional<std::string_view> inner = Between(text, format.call_open, format.call_close);
  if (!inner) return std::nullopt;
  const std::string_view body = StripAsciiSpace(*inner);
  // An empty call ("<tool></tool>") is still a call, with an empty name: the environment then
  // answers that no such tool exists, which tells the model what it did wrong.
  const size_t name_end = std::min(body.find_first_of(kSpaces), body.size());
  ToolCall call;
  call.name = std::string(body.substr(0, name_end));
  call.arguments = std::string(StripAsciiSpace(body.substr(name_end)));
  return call;
}

std::string ExtractFinalAnswer(const ToolCallFormat& format, std::string_view text) {
  // The first marked answer, like the first call: a model that restates its answer later in the
  // turn does not get to change it.
  std::optional<std::string_view> inner = Between(text, format.answer_open, format.answer_close);
  return std::string(StripAsciiSpace(inner ? *inner : text));
}

std::string FormatToolCall(const ToolCallFormat& format, std::string_view name,
                           std::string_view arguments) {
  return format.call_open + std::string(name) + " " + std::string(arguments) + format.call_close;
}

std::string FormatFinalAnswer(const ToolCallFormat& format, std::string_view answer) {
  return format.answer_open + std::string(answer) + format.answer_close;
}

}  // namespace sluice::rollout
