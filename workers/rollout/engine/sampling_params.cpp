#include "workers/rollout/engine/sampling_params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>

namespace sluice::engine {
namespace {

using nlohmann::json;

Status Bad(std::string_view key, std::string message) {
  return Status::InvalidArgument(std::move(message), "sampling." + std::string(key));
}

std::string Num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

Result<double> GetNumber(std::string_view key, const json& v) {
  if (!v.is_number()) return Bad(key, "must be a number, got " + std::string(v.type_name()));
  return v.get<double>();
}

Result<int64_t> GetInteger(std::string_view key, const json& v, int64_t min, int64_t max) {
  if (!v.is_number_integer()) {
    return Bad(key, "must be an integer, got " + (v.is_number() ? v.dump() : v.type_name()));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)) {
    return Bad(key, "must be at most " + std::to_string(max) + ", got " + v.dump());
  }
  const int64_t i = v.get<int64_t>();
  if (i < min || i > max) {
    return Bad(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                        std::to_string(i));
  }
  return i;
}

Result<bool> GetBool(std::string_view key, const json& v) {
  if (!v.is_boolean()) return Bad(key, "must be a boolean, got " + std::string(v.type_name()));
  return v.get<bool>();
}

Result<std::string> GetString(std::string_view key, const json& v) {
  if (!v.is_string()) return Bad(key, "must be a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

constexpr std::string_view kKeys[] = {
    "temperature", "top_p",          "top_k", "seed",       "max_new_tokens", "max_tokens",
    "n",           "stop_token_ids", "stop",  "ignore_eos", "on_weight_swap"};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

// Parses one key into `p`; the caller has skipped nulls.
Status ParseKey(const std::string& key, const json& v, SamplingParams& p) {
  if (key == "temperature") {
    SLUICE_ASSIGN_OR_RETURN(p.temperature, GetNumber(key, v));
  } else if (key == "top_p") {
    SLUICE_ASSIGN_OR_RETURN(p.top_p, GetNumber(key, v));
  } else if (key == "top_k") {
    SLUICE_ASSIGN_OR_RETURN(int64_t k, GetInteger(key, v, kInt32Min, kInt32Max));
    // vLLM and its clients spell "off" as -1.
    p.top_k = k == -1 ? 0 : static_cast<int32_t>(k);
  } else if (key == "seed") {
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      return Bad(key, "must be a non-negative integer, got " +
                          (v.is_number() ? v.dump() : std::string(v.type_name())));
    }
    p.seed = v.get<uint64_t>();
  } else if (key == "max_new_tokens" || key == "max_tokens") {
    SLUICE_ASSIGN_OR_RETURN(int64_t m, GetInteger(key, v, kInt32Min, kInt32Max));
    p.max_new_tokens = static_cast<int32_t>(m);
  } else if (key == "n") {
    SLUICE_ASSIGN_OR_RETURN(int64_t n, GetInteger(key, v, kInt32Min, kInt32Max));
    p.n = static_cast<int32_t>(n);
  } else if (key == "stop_token_ids") {
    if (!v.is_array())
      return Bad(key, "must be a list of integers, got " + std::string(v.type_name()));
    p.stop_token_ids.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item = key + "[" + std::to_string(i) + "]";
      SLUICE_ASSIGN_OR_RETURN(int64_t id, GetInteger(item, v[i], kInt32Min, kInt32Max));
      p.stop_token_ids.push_back(static_cast<int32_t>(id));
    }
  } else if (key == "stop") {
    p.stop.clear();
    if (v.is_string()) {
      p.stop.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(std::string s,
                                GetString(key + "[" + std::to_string(i) + "]", v[i]));
        p.stop.push_back(std::move(s));
      }
    } else {
      return Bad(key, "must be a string or a list of strings, got " + std::string(v.type_name()));
    }
  } else if (key == "ignore_eos") {
    SLUICE_ASSIGN_OR_RETURN(p.ignore_eos, GetBool(key, v));
  } else if (key == "on_weight_swap") {
    SLUICE_ASSIGN_OR_RETURN(std::string mode, GetString(key, v));
    if (mode == "continue") {
      p.on_weight_swap = SamplingParams::OnWeightSwap::kContinue;
    } else if (mode == "abort") {
      p.on_weight_swap = SamplingParams::OnWeightSwap::kAbort;
    } else {
      return Bad(key, "must be \"continue\" or \"abort\", got \"" + mode + "\"");
    }
  } else {
    return Bad(key, "unknown key");
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return Bad("temperature", "must be >= 0 (0 is greedy), got " + Num(p.temperature));
  }
  if (!(p.top_p > 0 && p.top_p <= 1)) {
    return Bad("top_p", "must be in (0, 1], got " + Num(p.top_p));
  }
  if (p.top_k < 0) return Bad("top_k", "must be >= 0 (0 is off), got " + std::to_string(p.top_k));
  if (p.max_new_tokens < 1) {
    return Bad("max_new_tokens", "must be >= 1, got " + std::to_string(p.max_new_tokens));
  }
  if (p.n < 1) return Bad("n", "must be >= 1, got " + std::to_string(p.n));
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i) {
    if (p.stop_token_ids[i] < 0) {
      return Bad("stop_token_ids[" + std::to_string(i) + "]",
                 "must be a token id >= 0, got " + std::to_string(p.stop_token_ids[i]));
    }
  }
  for (size_t i = 0; i < p.stop.size(); ++i) {
    // An empty stop string would match at once and end every generation before it starts.
    if (p.stop[i].empty()) return Bad("stop[" + std::to_string(i) + "]", "must not be empty");
  }
  return Status::Ok();
}

Result<SamplingParams> SamplingParamsFromJson(const json& j) {
  if (!j.is_object()) {
    return Status::InvalidArgument("must be a JSON object, got " + std::string(j.type_name()),
                                   "sampling");
  }
  if (j.contains("max_tokens") && j.contains("max_new_tokens") && !j["max_tokens"].is_null() &&
      !j["max_new_tokens"].is_null()) {
    return Bad("max_tokens", "is an alias of max_new_tokens; give only one");
  }
  SamplingParams p;
  for (const auto& [key, value] : j.items()) {
    if (value.is_null()) {
      // Same as absent (OpenAI clients send "stop": null), but a typo is still an error.
      if (std::ranges::find(kKeys, key) == std::end(kKeys)) return Bad(key, "unknown key");
      continue;
    }
    SLUICE_RETURN_IF_ERROR(ParseKey(key, value, p));
  }
  SLUICE_RETURN_IF_ERROR(Validate(p));
  return p;
}

json SamplingParamsToJson(const SamplingParams& p) {
  json j = {
      {"temperature", p.temperature},
      {"top_p", p.top_p},
      {"top_k", p.top_k},
      {"max_new_tokens", p.max_new_tokens},
      {"n", p.n},
      {"stop_token_ids", p.stop_token_ids},
      {"stop", p.stop},
      {"ignore_eos", p.ignore_eos},
      {"on_weight_swap",
       p.on_weight_swap == SamplingParams::OnWeightSwap::kAbort ? "abort" : "continue"},
  };
  if (p.seed) j["seed"] = *p.seed;
  return j;
}

}  // namespace sluice::engine
