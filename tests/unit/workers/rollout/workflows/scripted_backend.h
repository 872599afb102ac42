// ScriptedBackend: a GenerationBackend for workflow tests that returns canned completions instead
// of running a model, so an episode's token layout can be checked exactly.
//
// A Responder picks each completion's text from the policy, the prompt (decoded, markers
// included) and the completion's index within the request; Queue() makes one that hands out each
// policy's texts in order. The text is encoded with the CharTokenizer as the model's output would
// be, markers included ("42<|end|>" ends with the <|end|> id), then the engine's rules apply: the
// completion ends after the first stop token id ("stop"), or is cut at max_new_tokens ("length");
// a text with neither ends "stop" as if the model had sampled EOS. Every token has version
// kVersion and log-prob kLogprob; `text` is the decoded tokens, markers included, as the engine
// decodes them.
//
// Thread safety: Generate may be called from many threads at once (responders made by Queue are
// locked); requests() returns a copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "workers/model/char_tokenizer.h"
#include "workers/model/chat_template.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout::test_support {

// A policy as the built-in tiny models have it: CharTokenizer and the "plain" chat template.
inline PolicyText PlainCharPolicy() {
  static const auto tokenizer = std::make_shared<const model::CharTokenizer>();
  static const auto chat_template =
      std::make_shared<const model::ChatTemplate>(model::ChatTemplate::ByName("plain").value());
  return PolicyText{tokenizer, chat_template};
}

class ScriptedBackend final : public GenerationBackend {
 public:
  static constexpr int64_t kVersion = 7;
  static constexpr float kLogprob = -0.5f;
  static constexpr double kSeconds = 0.25;  // Completion::seconds of every completion.

  using Responder = std::function<std::string(const std::string& policy,
                                              const std::string& prompt_text, int32_t index)>;

  explicit ScriptedBackend(Responder responder) : responder_(std::move(responder)) {}

  // Each policy's texts in order, one per completion; an exhausted script yields "".
  static Responder Queue(std::map<std::string, std::vector<std::string>> scripts) {
    struct State {
      std::mutex mu;
      std::map<std::string, std::vector<std::string>> scripts;
      std::map<std::string, size_t> next;
    };
    auto state = std::make_shared<State>();
    state->scripts = std::move(scripts);
    return [state](const std::string& policy, const std::string&, int32_t) {
      std::lock_guard<std::mutex> lock(state->mu);
      const std::vector<std::string>& texts = state->scripts[policy];
      size_t& next = state->next[policy];
      return next < texts.size() ? texts[next++] : std::string();
    };
  }

  // Policies Generate accepts; empty (the default) accepts any.
  void set_hosted(std::vector<std::string> policies) { hosted_ = std::move(policies); }

  Result<std::vector<Completion>> Generate(const GenerateRequest& request,
                                           const CancellationToken& cancel) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    if (cancel.IsCancelled()) return Status::Cancelled("cancelled");
    if (!hosted_.empty() &&
        std::find(hosted_.begin(), hosted_.end(), request.policy) == hosted_.end()) {
      return Status::InvalidArgument("unknown policy \"" + request.policy + "\"");
    }
    const std::string prompt_text = tokenizer_.Decode(request.prompt);
    std::vector<Completion> out;
    for (int32_t i = 0; i < request.sampling.n; ++i) {
      const std::vector<int32_t> all =
          tokenizer_.Encode(responder_(request.policy, prompt_text, i));
      Completion c;
      c.finish_reason = "stop";
      for (int32_t id : all) {
        if (static_cast<int32_t>(c.tokens.size()) == request.sampling.max_new_tokens) {
          c.finish_reason = "length";
          break;
        }
        c.tokens.push_back(id);
        const auto& stops = request.sampling.stop_token_ids;
        if (std::find(stops.begin(), stops.end(), id) != stops.end()) break;
      }
      c.logprobs.assign(c.tokens.size(), kLogprob);
      c.versions.assign(c.tokens.size(), kVersion);
      c.text = tokenizer_.Decode(c.tokens);
      c.seconds = kSeconds;
      out.push_back(std::move(c));
    }
    return out;
  }

  std::vector<GenerateRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  Responder responder_;
  model::CharTokenizer tokenizer_;
  std::vector<std::string> hosted_;
  mutable std::mutex mu_;
  std::vector<GenerateRequest> requests_;
};

}  // namespace sluice::rollout::test_support
