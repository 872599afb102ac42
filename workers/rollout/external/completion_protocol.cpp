#include "workers/rollout/external/completion_protocol.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "common/json/json_depth.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

constexpr std::string_view kTokenIdPrefix = "token_id:";
constexpr size_t kMaxEcho = 512;

Status Bad(const std::string& path, std::string message) {
  return Status::InvalidArgument(std::move(message), path);
}

std::string Echo(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 64) + "...";
  return text;
}

// `object[key]` when `object` is an object holding it, else an InvalidArgument for `path`.
Result<const json*> Member(const json& object, const std::string& key, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) return Bad(path, "missing");
  return &*it;
}

Result<std::string> StringAt(const json& value, const std::string& path) {
  if (!value.is_string()) return Bad(path, "must be a string, got " + Echo(value));
  return value.get<std::string>();
}

Result<const json*> ArrayAt(const json& object, const std::string& key, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const json* value, Member(object, key, path));
  if (!value->is_array()) return Bad(path, "must be an array, got " + Echo(*value));
  return value;
}

Result<float> LogprobAt(const json& value, const std::string& path) {
  if (value.is_null()) return Bad(path, "is null; every generated token needs its log-probability");
  if (!value.is_number()) return Bad(path, "must be a number, got " + Echo(value));
  return static_cast<float>(value.get<double>());
}

Result<int32_t> TokenIdAt(const json& value, const std::string& path) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    return Bad(path, "must be a non-negative 32-bit token id, got " + Echo(value));
  }
  return static_cast<int32_t>(value.get<int64_t>());
}

// "token_id:123" -> 123 (vLLM's return_tokens_as_token_ids form).
Result<int32_t> TokenIdFromString(const json& value, const std::string& path) {
  auto malformed = [&] {
    return Bad(path, "expected \"token_id:<id>\" (return_tokens_as_token_ids), got " + Echo(value));
  };
  if (!value.is_string()) return malformed();
  const std::string& text = value.get_ref<const std::string&>();
  if (!std::string_view(text).starts_with(kTokenIdPrefix)) return malformed();
  const char* begin = text.data() + kTokenIdPrefix.size();
  const char* end = text.data() + text.size();
  int32_t id = 0;
  auto [stop, ec] = std::from_chars(begin, end, id);
  if (begin == end || ec != std::errc() || stop != end || id < 0) return malformed();
  return id;
}

std::string NormaliseFinishReason(const std::string& reason) {
  return reason == "stop" || reason == "length" ? reason : "abort";
}

// Sends a uint64 seed as the signed 64-bit value vLLM validates against: the top bit is
// dropped, so the mapping is deterministic (seeds differing only in it coincide).
int64_t FoldSeed(uint64_t seed) {
  return static_cast<int64_t>(seed & static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

Result<Completion> ParseVllmChoice(const json& choice, const std::string& path) {
  Completion c;
  SLUICE_ASSIGN_OR_RETURN(const json* text, Member(choice, "text", path + ".text"));
  SLUICE_ASSIGN_OR_RETURN(c.text, StringAt(*text, path + ".text"));
  SLUICE_ASSIGN_OR_RETURN(const json* finish,
                          Member(choice, "finish_reason", path + ".finish_reason"));
  SLUICE_ASSIGN_OR_RETURN(std::string reason, StringAt(*finish, path + ".finish_reason"));
  c.finish_reason = NormaliseFinishReason(reason);

  const std::string lp_path = path + ".logprobs";
  SLUICE_ASSIGN_OR_RETURN(const json* logprobs, Member(choice, "logprobs", lp_path));
  if (!logprobs->is_object()) {
    return Bad(lp_path,
               "must be an object (the request asks for logprobs), got " + Echo(*logprobs));
  }
  SLUICE_ASSIGN_OR_RETURN(const json* tokens, ArrayAt(*logprobs, "tokens", lp_path + ".tokens"));
  SLUICE_ASSIGN_OR_RETURN(const json* token_logprobs,
                          ArrayAt(*logprobs, "token_logprobs", lp_path + ".token_logprobs"));
  if (tokens->size() != token_logprobs->size()) {
    return Bad(lp_path + ".token_logprobs", "has " + std::to_string(token_logprobs->size()) +
                                                " entries but tokens has " +
                                                std::to_string(tokens->size()));
  }
  c.tokens.reserve(tokens->size());
  c.logprobs.reserve(tokens->size());
  for (size_t t = 0; t < tokens->size(); ++t) {
    const std::string index = "[" + std::to_string(t) + "]";
    SLUICE_ASSIGN_OR_RETURN(int32_t id,
                            TokenIdFromString((*tokens)[t], lp_path + ".tokens" + index));
    SLUICE_ASSIGN_OR_RETURN(float lp,
                            LogprobAt((*token_logprobs)[t], lp_path + ".token_logprobs" + index));
    c.tokens.push_back(id);
    c.logprobs.push_back(lp);
  }
  return c;
}

// One /generate result object; `prefix` is "" or "[i]." (paths of an array reply).
Result<Completion> ParseSglangOutput(const json& output, const std::string& prefix) {
  const std::string where = prefix.empty() ? "reply" : prefix.substr(0, prefix.size() - 1);
  if (!output.is_object()) return Bad(where, "must be an object, got " + Echo(output));
  Completion c;
  SLUICE_ASSIGN_OR_RETURN(const json* text, Member(output, "text", prefix + "text"));
  SLUICE_ASSIGN_OR_RETURN(c.text, StringAt(*text, prefix + "text"));

  const std::string meta_path = prefix + "meta_info";
  SLUICE_ASSIGN_OR_RETURN(const json* meta, Member(output, "meta_info", meta_path));
  if (!meta->is_object()) return Bad(meta_path, "must be an object, got " + Echo(*meta));

  const std::string finish_path = meta_path + ".finish_reason";
  SLUICE_ASSIGN_OR_RETURN(const json* finish, Member(*meta, "finish_reason", finish_path));
  if (!finish->is_object()) {
    return Bad(finish_path, "must be an object {\"type\": ...}, got " + Echo(*finish));
  }
  SLUICE_ASSIGN_OR_RETURN(const json* type, Member(*finish, "type", finish_path + ".type"));
  SLUICE_ASSIGN_OR_RETURN(std::string reason, StringAt(*type, finish_path + ".type"));
  c.finish_reason = NormaliseFinishReason(reason);

  const std::string lp_path = meta_path + ".output_token_logprobs";
  SLUICE_ASSIGN_OR_RETURN(const json* entries, ArrayAt(*meta, "output_token_logprobs", lp_path));
  c.tokens.reserve(entries->size());
  c.logprobs.reserve(entries->size());
  for (size_t t = 0; t < entries->size(); ++t) {
    const std::string entry_path = lp_path + "[" + std::to_string(t) + "]";
    const json& entry = (*entries)[t];
    if (!entry.is_array() || entry.size() < 2) {
      return Bad(entry_path, "must be [logprob, token_id, text], got " + Echo(entry));
    }
    SLUICE_ASSIGN_OR_RETURN(float lp, LogprobAt(entry[0], entry_path + "[0]"));
    SLUICE_ASSIGN_OR_RETURN(int32_t id, TokenIdAt(entry[1], entry_path + "[1]"));
    c.tokens.push_back(id);
    c.logprobs.push_back(lp);
  }
  return c;
}

}  // namespace

Result<ServerFlavour> ParseServerFlavour(std::string_view name) {
  if (name == "vllm") return ServerFlavour::kVllm;
  if (name == "sglang") return ServerFlavour::kSglang;
  return Status::InvalidArgument(
      "must be \"vllm\" or \"sglang\", got \"" + std::string(name.substr(0, 64)) + "\"", "flavour");
}

std::string_view FlavourName(ServerFlavour flavour) {
  return flavour == ServerFlavour::kVllm ? "vllm" : "sglang";
}

std::string_view FlavourDisplayName(ServerFlavour flavour) {
  return flavour == ServerFlavour::kVllm ? "vLLM" : "SGLang";
}

json VllmCompletionBody(const std::string& model, const std::vector<int32_t>& prompt,
                        const engine::SamplingParams& sampling) {
  json body = {
      {"model", model},
      {"prompt", prompt},
      {"n", sampling.n},
      {"max_tokens", sampling.max_new_tokens},
      {"temperature", sampling.temperature},
      {"top_p", sampling.top_p},
      {"stop", sampling.stop},
      {"stop_token_ids", sampling.stop_token_ids},
      {"logprobs", 1},
      {"return_tokens_as_token_ids", true},
      {"skip_special_tokens", false},
      {"stream", false},
  };
  if (sampling.top_k != 0) body["top_k"] = sampling.top_k;
  if (sampling.seed) body["seed"] = FoldSeed(*sampling.seed);
  if (sampling.ignore_eos) body["ignore_eos"] = true;
  return body;
}

Result<std::vector<Completion>> ParseVllmCompletionReply(const json& reply, int32_t n) {
  if (!reply.is_object()) return Bad("reply", "must be a JSON object, got " + Echo(reply));
  SLUICE_ASSIGN_OR_RETURN(const json* choices, ArrayAt(reply, "choices", "choices"));
  if (choices->size() != static_cast<size_t>(n)) {
    return Bad("choices", "expected " + std::to_string(n) + " choices (n), got " +
                              std::to_string(choices->size()));
  }
  std::vector<std::optional<Completion>> ordered(static_cast<size_t>(n));
  for (size_t i = 0; i < choices->size(); ++i) {
    const std::string path = "choices[" + std::to_string(i) + "]";
    const json& choice = (*choices)[i];
    if (!choice.is_object()) return Bad(path, "must be an object, got " + Echo(choice));
    SLUICE_ASSIGN_OR_RETURN(const json* index, Member(choice, "index", path + ".index"));
    if (!index->is_number_integer() || index->get<int64_t>() < 0 || index->get<int64_t>() >= n) {
      return Bad(path + ".index",
                 "must be an integer in [0, " + std::to_string(n) + "), got " + Echo(*index));
    }
    std::optional<Completion>& slot = ordered[index->get<size_t>()];
    if (slot) return Bad(path + ".index", "repeats index " + index->dump());
    SLUICE_ASSIGN_OR_RETURN(slot, ParseVllmChoice(choice, path));
  }
  std::vector<Completion> out;
  out.reserve(ordered.size());
  for (std::optional<Completion>& c : ordered) out.push_back(std::move(*c));
  return out;
}

json SglangGenerateBody(const std::vector<int32_t>& prompt,
                        const engine::SamplingParams& sampling) {
  json params = {
      {"max_new_tokens", sampling.max_new_tokens},
      {"temperature", sampling.temperature},
      {"top_p", sampling.top_p},
      {"top_k", sampling.top_k == 0 ? -1 : sampling.top_k},
      {"stop", sampling.stop},
      {"stop_token_ids", sampling.stop_token_ids},
      {"n", sampling.n},
      {"skip_special_tokens", false},
  };
  if (sampling.ignore_eos) params["ignore_eos"] = true;
  if (sampling.seed) params["sampling_seed"] = FoldSeed(*sampling.seed);
  return {{"input_ids", prompt}, {"sampling_params", std::move(params)}, {"return_logprob", true}};
}

Result<std::vector<Completion>> ParseSglangGenerateReply(const json& reply, int32_t n) {
  std::vector<Completion> out;
  if (reply.is_object()) {
    if (n != 1) {
      return Bad("reply",
                 "expected an array of " + std::to_string(n) + " results (n), got one object");
    }
    SLUICE_ASSIGN_OR_RETURN(Completion c, ParseSglangOutput(reply, ""));
    out.push_back(std::move(c));
    return out;
  }
  if (!reply.is_array()) return Bad("reply", "must be an object or an array, got " + Echo(reply));
  if (reply.size() != static_cast<size_t>(n)) {
    return Bad("reply", "expected " + std::to_string(n) + " results (n), got " +
                            std::to_string(reply.size()));
  }
  out.reserve(reply.size());
  for (size_t i = 0; i < reply.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Completion c,
                            ParseSglangOutput(reply[i], "[" + std::to_string(i) + "]."));
    out.push_back(std::move(c));
  }
  return out;
}

Status ServerErrorStatus(int http_status, std::string_view body, std::string_view what) {
  StatusCode code = StatusCodeForHttp(http_status);
  if (code == StatusCode::kOk) code = StatusCode::kInternal;  // Callers pass non-2xx only.
  std::string detail;
  // Too deep to parse safely reads as no JSON at all (json_depth.h).
  const json value =
      FirstTooDeepJson(body) ? json() : json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_object()) {
    auto error = value.find("error");
    if (error != value.end() && error->is_object() && error->contains("message")) {
      const json& m = (*error)["message"];
      detail = m.is_string() ? m.get<std::string>() : m.dump();
    } else if (error != value.end() && error->is_string()) {
      detail = error->get<std::string>();
    } else if (auto m = value.find("message"); m != value.end()) {
      detail = m->is_string() ? m->get<std::string>() : m->dump();
    } else if (auto d = value.find("detail"); d != value.end()) {
      detail = d->is_string() ? d->get<std::string>() : d->dump();
    }
  }
  if (detail.empty()) detail = std::string(body.substr(0, kMaxEcho));
  if (detail.size() > kMaxEcho) detail = detail.substr(0, kMaxEcho) + "...";
  std::string message = std::string(what) + ": HTTP " + std::to_string(http_status);
  if (!detail.empty()) message += ": " + detail;
  return Status(code, std::move(message));
}

}  // namespace sluice::rollout
