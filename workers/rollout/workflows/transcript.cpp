#include "workers/rollout/workflows/transcript.h"

#include <algorithm>
#include <utility>

namespace sluice::rollout {
namespace {

using model::ChatMessage;
using model::ChatTemplate;

// A stretch of rendered text: the template's own text (markers allowed) or a message's content
// (always ordinary text).
struct Piece {
  std::string text;
  bool content = false;
};

size_t CommonPrefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

Status TemplateMismatch(const ChatTemplate& t, std::string_view what) {
  return Status::Internal("chat template \"" + std::string(t.name()) +
                          "\" does not insert message contents verbatim: " + std::string(what));
}

// The rendering of `messages` split into template text and contents (see transcript.h).
Result<std::vector<Piece>> RenderPieces(const ChatTemplate& t,
                                        std::span<const ChatMessage> messages,
                                        bool add_generation_prompt) {
  std::vector<ChatMessage> blank(messages.begin(), messages.end());
  for (ChatMessage& m : blank) m.content.clear();
  SLUICE_ASSIGN_OR_RETURN(const std::string frame, t.Render(blank, add_generation_prompt));

  std::vector<Piece> pieces;
  size_t frame_pos = 0;  // Frame text before this offset is already in `pieces`.
  for (size_t i = 0; i < messages.size(); ++i) {
    // Where the template puts message i's content: a one-character probe makes the rendering first
    // differ from the frame there. Two different probes, because a frame character right after the
    // insertion point equal to the probe would push the first difference further along.
    size_t at = frame.size();
    for (const char* probe : {"x", "y"}) {
      std::vector<ChatMessage> probed = blank;
      probed[i].content = probe;
      SLUICE_ASSIGN_OR_RETURN(const std::string r, t.Render(probed, add_generation_prompt));
      if (r.size() != frame.size() + 1) return TemplateMismatch(t, "a probe changed the frame");
      at = std::min(at, CommonPrefix(frame, r));
    }
    if (at < frame_pos) return TemplateMismatch(t, "contents out of message order");
    if (messages[i].content.empty()) continue;

    std::vector<ChatMessage> filled = blank;
    filled[i].content = messages[i].content;
    SLUICE_ASSIGN_OR_RETURN(const std::string r, t.Render(filled, add_generation_prompt));
    const size_t tail = frame.size() - at;
    if (r.size() < frame.size() || r.compare(0, at, frame, 0, at) != 0 ||
        r.compare(r.size() - tail, tail, frame, at, tail) != 0) {
      return TemplateMismatch(t, "the content changed the text around it");
    }
    pieces.push_back({frame.substr(frame_pos, at - frame_pos), false});
    pieces.push_back({r.substr(at, r.size() - frame.size()), true});
    frame_pos = at;
  }
  pieces.push_back({frame.substr(frame_pos), false});

  // The pieces must be exactly what the template renders.
  SLUICE_ASSIGN_OR_RETURN(const std::string full, t.Render(messages, add_generation_prompt));
  std::string joined;
  joined.reserve(full.size());
  for (const Piece& p : pieces) joined += p.text;
  if (joined != full) return TemplateMismatch(t, "the pieces do not add up to the rendering");
  return pieces;
}

void EncodePieces(const model::Tokenizer& tokenizer, std::span<const Piece> pieces,
                  std::vector<int32_t>* out) {
  for (const Piece& p : pieces) {
    if (p.text.empty()) continue;
    const std::vector<int32_t> ids =
        p.content ? tokenizer.EncodeOrdinary(p.text) : tokenizer.Encode(p.text, false);
    out->insert(out->end(), ids.begin(), ids.end());
  }
}

}  // namespace

void Transcript::AppendContext(std::span<const int32_t> tokens) {
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  loss_mask_.insert(loss_mask_.end(), tokens.size(), 0);
  logprobs_.insert(logprobs_.end(), tokens.size(), 0.0f);
  versions_.insert(versions_.end(), tokens.size(), dataflow::kNoVersion);
  owners_.insert(owners_.end(), tokens.size(), dataflow::kNoOwner);
}

Status Transcript::AppendGenerated(const Completion& completion, int32_t owner) {
  const size_t n = completion.tokens.size();
  if (completion.logprobs.size() != n || completion.versions.size() != n) {
    return Status::Internal("the backend returned a completion whose logprobs (" +
                            std::to_string(completion.logprobs.size()) + ") or versions (" +
                            std::to_string(completion.versions.size()) +
                            ") are not one per token (" + std::to_string(n) + ")");
  }
  turn_starts_.push_back(static_cast<uint32_t>(tokens_.size()));
  tokens_.insert(tokens_.end(), completion.tokens.begin(), completion.tokens.end());
  loss_mask_.insert(loss_mask_.end(), n, 1);
  logprobs_.insert(logprobs_.end(), completion.logprobs.begin(), completion.logprobs.end());
  versions_.insert(versions_.end(), completion.versions.begin(), completion.versions.end());
  owners_.insert(owners_.end(), n, owner);
  return Status::Ok();
}

void Transcript::MoveInto(dataflow::Sample* sample, bool with_owners) {
  sample->tokens = std::move(tokens_);
  sample->loss_mask = std::move(loss_mask_);
  sample->behaviour_logprobs = std::move(logprobs_);
  sample->versions = std::move(versions_);
  sample->turn_starts = std::move(turn_starts_);
  if (with_owners) {
    sample->token_owner = std::move(owners_);
  } else {
    sample->token_owner.clear();
  }
  *this = Transcript();
}

std::vector<ChatMessage> PromptMessages(const std::optional<std::string>& system_prompt,
                                        std::string user_content) {
  std::vector<ChatMessage> messages;
  if (system_prompt) messages.push_back({"system", *system_prompt});
  messages.push_back({"user", std::move(user_content)});
  return messages;
}

Result<std::vector<int32_t>> EncodeConversation(const PolicyText& text,
                                                std::span<const ChatMessage> messages,
                                                bool add_generation_prompt) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Piece> pieces,
                          RenderPieces(*text.chat_template, messages, add_generation_prompt));
  std::vector<int32_t> ids;
  EncodePieces(*text.tokenizer, pieces, &ids);
  return ids;
}

Result<int32_t> EndOfTurnId(const PolicyText& text) {
  const std::string_view eot = text.chat_template->end_of_turn();
  const std::optional<int32_t> id = text.tokenizer->TokenId(eot);
  if (!id || !text.tokenizer->IsSpecial(*id)) {
    return Status::InvalidArgument("the tokenizer has no special token \"" + std::string(eot) +
                                   "\", the end of turn of chat template \"" +
                                   std::string(text.chat_template->name()) + "\"");
  }
  return *id;
}

Result<std::vector<int32_t>> EncodeFollowUp(const PolicyText& text,
                                            std::span<const int32_t> turn_tokens,
                                            const ChatMessage& message) {
  const ChatTemplate& t = *text.chat_template;
  // Any first message will do: only the text after it matters. An empty one keeps its content
  // out of the pieces.
  const std::vector<ChatMessage> conversation = {{"assistant", ""}, message};
  SLUICE_ASSIGN_OR_RETURN(const std::string before,
                          t.Render(std::span<const ChatMessage>(conversation.data(), 1), false));
  SLUICE_ASSIGN_OR_RETURN(std::vector<Piece> pieces, RenderPieces(t, conversation, true));

  const std::string_view eot = t.end_of_turn();
  const size_t eot_at = before.rfind(eot);
  if (eot_at == std::string::npos) return TemplateMismatch(t, "a message has no end of turn");
  // What the template writes after the model's end-of-turn marker: the model stopped at the
  // marker, so this text is context the next turn needs.
  const std::string opening = before.substr(eot_at + eot.size());

  // Drop `before` from the front of the pieces; it is template text only (its content is empty).
  std::vector<Piece> rest;
  size_t consumed = 0;
  for (Piece& p : pieces) {
    const size_t take = std::min(p.text.size(), before.size() - consumed);
    if (take > 0 && (p.content || p.text.compare(0, take, before, consumed, take) != 0)) {
      return TemplateMismatch(t, "a conversation does not begin with its first message");
    }
    consumed += take;
    p.text.erase(0, take);
    if (!p.text.empty()) rest.push_back(std::move(p));
  }
  if (consumed != before.size()) {
    return TemplateMismatch(t, "a conversation is shorter than its first message");
  }
  if (!rest.empty() && !rest.front().content) {
    rest.front().text.insert(0, opening);
  } else {
    rest.insert(rest.begin(), Piece{opening, false});
  }

  SLUICE_ASSIGN_OR_RETURN(const int32_t eot_id, EndOfTurnId(text));
  std::vector<int32_t> ids;
  if (turn_tokens.empty() || turn_tokens.back() != eot_id) ids.push_back(eot_id);
  EncodePieces(*text.tokenizer, rest, &ids);
  return ids;
}

std::string_view TurnText(const PolicyText& text, const Completion& completion) {
  std::string_view s = completion.text;
  const std::string_view eot = text.chat_template->end_of_turn();
  if (s.ends_with(eot)) s.remove_suffix(eot.size());
  return s;
}

}  // namespace sluice::rollout
