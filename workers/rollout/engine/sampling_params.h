// SamplingParams: how one generation request samples its tokens, and its JSON form.
//
// The JSON keys follow the OpenAI / vLLM completion APIs where they overlap (max_tokens is an
// alias of max_new_tokens; "stop" is a string or a list; top_k -1 means off, as in vLLM), so
// clients written for those servers need no changes. Every error names the offending field as
// "sampling.<key>".
//
// Ownership and thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::engine {

struct SamplingParams {
  // What to do with a sequence still generating when the policy's weights are swapped.
  enum class OnWeightSwap {
    kContinue,  // Keep generating with the new weights (tokens carry their policy version).
    kAbort,     // End the sequence; what was generated so far is returned.
  };

  double temperature = 1.0;  // >= 0; 0 means greedy (argmax).
  double top_p = 1.0;        // Nucleus sampling mass, in (0, 1]; 1 is off.
  int32_t top_k = 0;         // Keep the k most likely tokens; 0 is off.
  // Seeds this request's random stream, making its samples reproducible; unset: engine-chosen.
  std::optional<uint64_t> seed;
  int32_t max_new_tokens = 256;         // Generated tokens at most, >= 1.
  int32_t n = 1;                        // Samples per prompt, >= 1; they share its prefill.
  std::vector<int32_t> stop_token_ids;  // Generation ends once any of these is sampled.
  std::vector<std::string> stop;        // Generation ends before any of these (cut from text).
  bool ignore_eos = false;              // Keep generating past the tokenizer's EOS token.
  OnWeightSwap on_weight_swap = OnWeightSwap::kContinue;

  friend bool operator==(const SamplingParams&, const SamplingParams&) = default;
};

// InvalidArgument naming the first bad field ("sampling.top_p: must be in (0, 1], got 1.5").
Status Validate(const SamplingParams& params);

// Parses a JSON object (keys as in SamplingParams, plus the alias max_tokens; a null value means
// the default) and validates it. InvalidArgument naming the key for an unknown key or a value of
// the wrong type or out of range.
Result<SamplingParams> SamplingParamsFromJson(const nlohmann::json& json);
// Every field (seed only when set); SamplingParamsFromJson reads it back to an equal value.
nlohmann::json SamplingParamsToJson(const SamplingParams& params);

}  // namespace sluice::engine
