// The generation requests and replies of the two external inference servers Sluice drives, as
// pure functions: building the JSON a server expects from a token-id prompt and SamplingParams,
// and turning its reply back into Completions. OpenAiBackend (openai_backend.h) does the HTTP.
//
// Versions followed (from their documented HTTP APIs):
// - vLLM 0.10 / 0.11, OpenAI-compatible server (`vllm serve`), POST /v1/completions with a
//   token-id prompt ("prompt": [ids]) and vLLM's extensions top_k, stop_token_ids, ignore_eos,
//   skip_special_tokens and return_tokens_as_token_ids (so that logprobs.tokens come back as
//   "token_id:<id>" and no detokenised string has to be mapped back to ids).
// - SGLang 0.4 / 0.5, native POST /generate ({"input_ids", "sampling_params", "return_logprob"}),
//   because SGLang's OpenAI-compatible /v1/completions returns logprobs.tokens as text only;
//   /generate returns meta_info.output_token_logprobs = [[logprob, token_id, text|null], ...].
//
// Every reply error is InvalidArgument whose field is the JSON path of the offending value in
// the reply ("choices[1].logprobs.tokens[3]"; for an SGLang array reply "[1].meta_info...").
// Parsed Completions carry tokens, logprobs, text and finish_reason; versions and seconds are
// left for the caller, which knows them.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/rollout/engine/sampling_params.h"
#include "workers/rollout/generation_backend.h"

namespace sluice::rollout {

enum class ServerFlavour {
  kVllm,    // vLLM's OpenAI-compatible server.
  kSglang,  // SGLang's server (native /generate).
};

// "vllm" or "sglang"; InvalidArgument (field "flavour") for anything else.
Result<ServerFlavour> ParseServerFlavour(std::string_view name);
// "vllm" or "sglang".
std::string_view FlavourName(ServerFlavour flavour);
// "vLLM" or "SGLang", for messages.
std::string_view FlavourDisplayName(ServerFlavour flavour);

// The body of vLLM's POST /v1/completions: model, prompt (token ids), n, max_tokens,
// temperature, top_p, top_k (omitted when 0, i.e. off), seed (when set; folded into
// [0, 2^63) because vLLM takes a signed 64-bit seed), stop, stop_token_ids, ignore_eos (when
// set), logprobs 1, return_tokens_as_token_ids, skip_special_tokens false, stream false.
nlohmann::json VllmCompletionBody(const std::string& model, const std::vector<int32_t>& prompt,
                                  const engine::SamplingParams& sampling);

// Parses a /v1/completions reply holding exactly `n` choices, in any order of "index", and
// returns them ordered by index. finish_reason "stop" and "length" are kept, any other string
// becomes "abort".
Result<std::vector<Completion>> ParseVllmCompletionReply(const nlohmann::json& reply, int32_t n);

// The body of SGLang's POST /generate: input_ids and sampling_params {max_new_tokens,
// temperature, top_p, top_k (-1 when off), stop, stop_token_ids, n, ignore_eos,
// skip_special_tokens false, sampling_seed when a seed is set}, return_logprob true.
// sampling_seed is honoured by SGLang 0.5 releases with deterministic sampling; older servers
// reject the unknown key, which then surfaces as the server's error.
nlohmann::json SglangGenerateBody(const std::vector<int32_t>& prompt,
                                  const engine::SamplingParams& sampling);

// Parses a /generate reply: an object when n is 1, an array of n objects in sample order (also
// accepted when n is 1). finish_reason comes from meta_info.finish_reason.type.
Result<std::vector<Completion>> ParseSglangGenerateReply(const nlohmann::json& reply, int32_t n);

// The Status for a non-2xx reply of either server: the code from the HTTP status and the
// server's own message, found in {"error": {"message"}} (vLLM >= 0.10, SGLang), {"message"}
// (vLLM's older ErrorResponse, SGLang's reload replies) or {"detail"} (FastAPI); else the start
// of the body. `what` names the call ("vLLM POST /v1/completions").
Status ServerErrorStatus(int http_status, std::string_view body, std::string_view what);

}  // namespace sluice::rollout
