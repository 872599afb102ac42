// Transcript: one sample's flat token sequence, built turn by turn (the token layout of
// workflow.h), and the chat-template glue that turns messages into the tokens a policy sees.
//
// Context (prompt, environment observations, instructions) and generated turns are appended in
// order; the per-token arrays stay parallel. Generated tokens get loss mask 1, their log-probs and
// versions, and the owner index the caller gives (an index into the sample's `policies`).
//
// Encoding without marker smuggling. Tokenizer::Encode turns every marker text into its special
// id, including marker text inside a task prompt or an environment observation, which would let
// untrusted text forge turns. EncodeConversation therefore encodes the template's own text with
// Encode and each message's content with EncodeOrdinary. To find which characters of the rendered
// text are content without a sentinel that untrusted text could contain, it renders the
// conversation with every content empty (the frame) and, per message, with only that message's
// content filled in: the frame tells where the template puts the content and the difference is
// the content exactly as the template inserted it (after any trimming it does). The pieces are
// checked to concatenate to the full rendering, so a template this reasoning does not fit is an
// Internal error rather than a silently wrong prompt.
//
// Thread safety: a Transcript is a plain value for one episode (one thread). The free functions
// are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"
#include "workers/model/chat_template.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

class Transcript {
 public:
  // Tokens no policy generated: mask 0, log-prob 0, version kNoVersion, owner kNoOwner.
  void AppendContext(std::span<const int32_t> tokens);
  // A model turn: mask 1, the completion's log-probs and versions, `owner` for every token;
  // records the turn's start offset. Internal (nothing appended) when the completion's logprobs
  // or versions are not parallel to its tokens: a backend bug must not corrupt a sample.
  Status AppendGenerated(const Completion& completion, int32_t owner);

  size_t size() const { return tokens_.size(); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<uint8_t>& loss_mask() const { return loss_mask_; }
  const std::vector<float>& logprobs() const { return logprobs_; }
  const std::vector<int64_t>& versions() const { return versions_; }
  const std::vector<int32_t>& owners() const { return owners_; }
  const std::vector<uint32_t>& turn_starts() const { return turn_starts_; }

  // Moves tokens, loss_mask, behaviour_logprobs, versions and turn_starts into `sample`, and
  // token_owner too when `with_owners` (multi-policy samples); leaves this transcript empty.
  void MoveInto(dataflow::Sample* sample, bool with_owners);

 private:
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> loss_mask_;
  std::vector<float> logprobs_;
  std::vector<int64_t> versions_;
  std::vector<int32_t> owners_;
  std::vector<uint32_t> turn_starts_;
};

// The messages of an episode's first prompt: a system message when `system_prompt` is set, then
// the user message.
std::vector<model::ChatMessage> PromptMessages(const std::optional<std::string>& system_prompt,
                                               std::string user_content);

// The token ids of `messages` rendered with the policy's template (followed by the assistant
// generation prompt when asked), with contents encoded as ordinary text (see the header comment).
// Errors: the template's (a bad role), Internal when the template does not insert contents as
// this function expects.
Result<std::vector<int32_t>> EncodeConversation(const PolicyText& text,
                                                std::span<const model::ChatMessage> messages,
                                                bool add_generation_prompt);

// The id of the template's end-of-turn marker in the policy's tokenizer (the stop token of every
// model turn). InvalidArgument when the tokenizer lacks it as a special token.
Result<int32_t> EndOfTurnId(const PolicyText& text);

// The tokens that follow a finished model turn to add `message` and open the next assistant
// turn: Render([m, message], true) minus Render([m], false) for any first message m, preceded
// by what Render([m], false) has after its last end-of-turn marker ("\n" for chatml and plain,
// nothing for llama3), and by the end-of-turn marker itself when `turn_tokens` (the model's turn)
// does not end with it (the turn was cut by its token limit). Template-agnostic; the content of
// `message` is encoded as ordinary text.
Result<std::vector<int32_t>> EncodeFollowUp(const PolicyText& text,
                                            std::span<const int32_t> turn_tokens,
                                            const model::ChatMessage& message);

// A completion's text without the end-of-turn marker the engine decodes at its end (the engine
// decodes special tokens too); what rewards and tool-call parsing read.
std::string_view TurnText(const PolicyText& text, const Completion& completion);

}  // namespace sluice::rollout
