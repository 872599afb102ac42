#include "workers/model/chat_template.h"

#include <array>

#include "common/ascii.h"

namespace sluice::model {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"chatml", "llama3", "plain"};
constexpr std::array<std::string_view, 2> kChatMlMarkers = {"<|im_start|>", "<|im_end|>"};
constexpr std::array<std::string_view, 4> kLlama3Markers = {
    "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
constexpr std::array<std::string_view, 5> kPlainMarkers = {"<|system|>", "<|user|>",
                                                           "<|assistant|>", "<|tool|>", "<|end|>"};

bool ValidRole(std::string_view role) {
  if (role.empty()) return false;
  for (char c : role) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::ByName(std::string_view name) {
  if (name == "chatml") return ChatTemplate(Kind::kChatMl);
  if (name == "llama3") return ChatTemplate(Kind::kLlama3);
  if (name == "plain") return ChatTemplate(Kind::kPlain);
  std::string known;
  for (std::string_view n : kNames) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  return Status::InvalidArgument("unknown chat template \"" + std::string(name) +
                                 "\"; known templates: " + known);
}

std::span<const std::string_view> ChatTemplate::KnownNames() { return kNames; }

std::string_view ChatTemplate::name() const {
  switch (kind_) {
    case Kind::kChatMl:
      return kNames[0];
    case Kind::kLlama3:
      return kNames[1];
    case Kind::kPlain:
      return kNames[2];
  }
  return {};
}

std::string_view ChatTemplate::end_of_turn() const {
  switch (kind_) {
    case Kind::kChatMl:
      return "<|im_end|>";
    case Kind::kLlama3:
      return "<|eot_id|>";
    case Kind::kPlain:
      return "<|end|>";
  }
  return {};
}

std::string_view ChatTemplate::generation_prompt() const {
  switch (kind_) {
    case Kind::kChatMl:
      return "<|im_start|>assistant\n";
    case Kind::kLlama3:
      return "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case Kind::kPlain:
      return "<|assistant|>\n";
  }
  return {};
}

std::span<const std::string_view> ChatTemplate::markers() const {
  switch (kind_) {
    case Kind::kChatMl:
      return kChatMlMarkers;
    case Kind::kLlama3:
      return kLlama3Markers;
    case Kind::kPlain:
      return kPlainMarkers;
  }
  return {};
}

Result<std::string> ChatTemplate::Render(std::span<const ChatMessage> messages,
                                         bool add_generation_prompt) const {
  std::string out;
  size_t total = 64;
  for (const ChatMessage& m : messages) total += m.role.size() + m.content.size() + 48;
  out.reserve(total);
  if (kind_ == Kind::kLlama3) out += "<|begin_of_text|>";
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (!ValidRole(m.role)) {
      return Status::InvalidArgument(
          "role \"" + m.role + "\" must be non-empty ASCII letters, digits, '_' or '-'",
          "messages[" + std::to_string(i) + "].role");
    }
    switch (kind_) {
      case Kind::kChatMl:
        out += "<|im_start|>";
        out += m.role;
        out += '\n';
        out += m.content;
        out += "<|im_end|>\n";
        break;
      case Kind::kLlama3:
        out += "<|start_header_id|>";
        out += m.role;
        out += "<|end_header_id|>\n\n";
        out += StripAsciiSpace(m.content);
        out += "<|eot_id|>";
        break;
      case Kind::kPlain:
        if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
          return Status::InvalidArgument(
              "role \"" + m.role + "\" is not one of system, user, assistant, tool",
              "messages[" + std::to_string(i) + "].role");
        }
        out += "<|";
        out += m.role;
        out += "|>\n";
        out += m.content;
        out += "<|end|>\n";
        break;
    }
  }
  if (add_generation_prompt) out += generation_prompt();
  return out;
}

Status ChatTemplate::CheckTokenizer(const Tokenizer& tokenizer) const {
  for (std::string_view marker : markers()) {
    auto id = tokenizer.TokenId(marker);
    if (!id || !tokenizer.IsSpecial(*id)) {
      return Status::InvalidArgument("chat template \"" + std::string(name()) + "\" needs \"" +
                                     std::string(marker) +
                                     "\" as a special token, which the tokenizer lacks");
    }
  }
  return Status::Ok();
}

}  // namespace sluice::model
