// Chat templates, chosen by name (no Jinja engine): they turn a conversation into the exact text
// a model was trained on, ready for Tokenizer::Encode (which turns the markers into their single
// special-token ids).
//
// The templates, where {role} and {content} are a message's fields:
//
//   "chatml" (Qwen2, Qwen2.5, Qwen3):
//     each message:       "<|im_start|>{role}\n{content}<|im_end|>\n"
//     generation prompt:  "<|im_start|>assistant\n"
//     end of turn:        "<|im_end|>"
//
//   "llama3" (Llama 3, 3.1, 3.2, 3.3 instruct):
//     once, first:        "<|begin_of_text|>"
//     each message:       "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>"
//                         where {content} has leading and trailing whitespace removed, as
//                         Meta's template does
//     generation prompt:  "<|start_header_id|>assistant<|end_header_id|>\n\n"
//     end of turn:        "<|eot_id|>"
//     The text begins with the bos token, so encode it with add_special = false.
//
//   "plain" (the built-in tiny models and CharTokenizer; roles system, user, assistant, tool):
//     each message:       "<|{role}|>\n{content}<|end|>\n"
//     generation prompt:  "<|assistant|>\n"
//     end of turn:        "<|end|>"
//
// Contents are inserted verbatim otherwise (no default system prompt, no tool schemas: those
// belong to the caller). A role must be non-empty and made of ASCII letters, digits, '_' and
// '-'; anything else is refused so a role can never forge a marker.
//
// Thread safety: values; immutable.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/tokenizer.h"

namespace sluice::model {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  // "chatml", "llama3" or "plain"; any other name is an error listing these.
  static Result<ChatTemplate> ByName(std::string_view name);
  static std::span<const std::string_view> KnownNames();

  std::string_view name() const;

  // The conversation as text; with add_generation_prompt, followed by the opening of an
  // assistant turn for the model to complete.
  Result<std::string> Render(std::span<const ChatMessage> messages,
                             bool add_generation_prompt) const;

  // The text that closes a turn: the model's stop token.
  std::string_view end_of_turn() const;
  // The opening of an assistant turn, as Render appends it.
  std::string_view generation_prompt() const;
  // The marker texts the template uses, each of which must be one special token.
  std::span<const std::string_view> markers() const;

  // OK when every marker is a single special token of `tokenizer` (otherwise rendered prompts
  // would be spelt out in ordinary tokens); the error names the first missing marker.
  Status CheckTokenizer(const Tokenizer& tokenizer) const;

 private:
  enum class Kind { kChatMl, kLlama3, kPlain };
  explicit ChatTemplate(Kind kind) : kind_(kind) {}
  Kind kind_;
};

}  // namespace sluice::model
