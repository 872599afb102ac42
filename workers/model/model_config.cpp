#include "workers/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/file/read_file.h"
#include "common/json/json_depth.h"
#include "workers/model/model_config_internal.h"

namespace sluice::model {
namespace {

using config_internal::Invalid;
using config_internal::Quote;
using nlohmann::json;

// Top-level keys read into ModelConfig fields.
const std::set<std::string>& ParsedFields() {
  static const std::set<std::string> kFields = {
      "architectures",
      "model_type",
      "vocab_size",
      "hidden_size",
      "intermediate_size",
      "num_hidden_layers",
      "num_attention_heads",
      "num_key_value_heads",
      "head_dim",
      "rms_norm_eps",
      "rope_theta",
      "rope_scaling",
      "rope_parameters",
      "max_position_embeddings",
      "tie_word_embeddings",
      "hidden_act",
      "torch_dtype",
      "dtype",
      "bos_token_id",
      "eos_token_id",
      "pad_token_id",
      "use_sliding_window",
      "sliding_window",
      "max_window_layers",
  };
  return kFields;
}

// Top-level keys that do not change the forward math (class 3 of the policy in the header), and
// keys that are refused unless set to the value Sluice implements (class 2; checked one by one
// in ParseHfConfig).
const std::set<std::string>& KnownFields() {
  static const std::set<std::string> kFields = {
      // Bookkeeping and transformers runtime switches.
      "transformers_version",
      "_name_or_path",
      "use_cache",
      "initializer_range",
      "tokenizer_class",
      "output_attentions",
      "output_hidden_states",
      "return_dict",
      "use_return_dict",
      "torchscript",
      "_attn_implementation_autoset",
      // Same math, different execution.
      "attention_dropout",
      "pretraining_tp",
      // Class 2: checked in ParseHfConfig.
      "attention_bias",
      "mlp_bias",
      "use_mrope",
      "layer_types",
      "partial_rotary_factor",
      "quantization_config",
      "attn_logit_softcapping",
      "final_logit_softcapping",
      "num_experts",
      "num_local_experts",
  };
  return kFields;
}

// Absent and null both mean "not given".
const json* Find(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<int64_t> AsInt(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(path, path + " is out of range: " + v.dump());
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return Invalid(path, path + " must be an integer, got " + v.dump());
}

Result<std::optional<int64_t>> ReadInt(const json& obj, const std::string& key,
                                       const std::string& path) {
  const json* v = Find(obj, key);
  if (v == nullptr) return std::optional<int64_t>();
  SLUICE_ASSIGN_OR_RETURN(int64_t i, AsInt(*v, path));
  return std::optional<int64_t>(i);
}

Result<std::optional<double>> ReadDouble(const json& obj, const std::string& key,
                                         const std::string& path) {
  const json* v = Find(obj, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return Invalid(path, path + " must be a number, got " + v->dump());
  const double d = v->get<double>();
  if (!std::isfinite(d)) return Invalid(path, path + " must be finite");
  return std::optional<double>(d);
}

Result<std::optional<bool>> ReadBool(const json& obj, const std::string& key,
                                     const std::string& path) {
  const json* v = Find(obj, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return Invalid(path, path + " must be true or false, got " + v->dump());
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::string>> ReadString(const json& obj, const std::string& key,
                                              const std::string& path) {
  const json* v = Find(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Invalid(path, path + " must be a string, got " + v->dump());
  return std::optional<std::string>(v->get<std::string>());
}

Result<int64_t> RequireInt(const json& obj, const std::string& key) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInt(obj, key, key));
  if (!v) return Invalid(key, "required field " + key + " is missing");
  return *v;
}

std::optional<Architecture> ArchitectureFromModelType(std::string_view s) {
  if (s == "llama") return Architecture::kLlama;
  if (s == "qwen2") return Architecture::kQwen2;
  if (s == "qwen3") return Architecture::kQwen3;
  return std::nullopt;
}

std::optional<Architecture> ArchitectureFromClass(std::string_view s) {
  if (s == "LlamaForCausalLM") return Architecture::kLlama;
  if (s == "Qwen2ForCausalLM") return Architecture::kQwen2;
  if (s == "Qwen3ForCausalLM") return Architecture::kQwen3;
  return std::nullopt;
}

Result<Architecture> ReadArchitecture(const json& j, ModelConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> model_type,
                          ReadString(j, "model_type", "model_type"));
  std::optional<Architecture> arch;
  if (model_type) {
    c.model_type = *model_type;
    arch = ArchitectureFromModelType(*model_type);
    if (!arch) {
      return Invalid("model_type", "unsupported model_type " + Quote(*model_type) +
                                       " (supported: llama, qwen2, qwen3)");
    }
  }
  if (const json* a = Find(j, "architectures"); a != nullptr) {
    if (!a->is_array()) {
      return Invalid("architectures", "architectures must be a list of strings");
    }
    for (const json& entry : *a) {
      if (!entry.is_string()) {
        return Invalid("architectures", "architectures must be a list of strings");
      }
      const std::string name = entry.get<std::string>();
      c.architectures.push_back(name);
      std::optional<Architecture> from_class = ArchitectureFromClass(name);
      if (!from_class) {
        return Invalid("architectures",
                       "unsupported architectures entry " + Quote(name) +
                           " (supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)");
      }
      if (arch && *arch != *from_class) {
        return Invalid("architectures", "architectures entry " + Quote(name) +
                                            " does not match model_type " +
                                            Quote(ModelTypeName(*arch)));
      }
      arch = from_class;
    }
  }
  if (!arch) {
    return Invalid("model_type", "model_type is missing (and no architectures to infer it from)");
  }
  return *arch;
}

Result<RopeType> RopeTypeFromName(const std::string& name, const std::string& path) {
  if (name == "default") return RopeType::kNone;
  if (name == "linear") return RopeType::kLinear;
  if (name == "llama3") return RopeType::kLlama3;
  if (name == "yarn") return RopeType::kYarn;
  return Invalid(path, "unsupported " + path + " " + Quote(name) +
                           " (supported: default, linear, llama3, yarn)");
}

// Reads rope_scaling (or v5 rope_parameters, which may also hold rope_theta) into `c`.
Status ReadRope(const json& r, const std::string& prefix, ModelConfig& c) {
  if (!r.is_object()) return Invalid(prefix, prefix + " must be an object or null");
  const std::string type_key = r.contains("rope_type") ? "rope_type" : "type";
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> type_name,
                          ReadString(r, type_key, prefix + "." + type_key));
  if (r.contains("rope_type") && r.contains("type")) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> other,
                            ReadString(r, "type", prefix + ".type"));
    if (type_name != other) {
      return Invalid(prefix + ".type", prefix + ".type and " + prefix + ".rope_type disagree");
    }
  }
  if (!type_name) return Invalid(prefix + ".rope_type", prefix + ".rope_type is missing");
  RopeScaling& s = c.rope_scaling;
  SLUICE_ASSIGN_OR_RETURN(s.type, RopeTypeFromName(*type_name, prefix + "." + type_key));

  std::set<std::string> allowed = {"rope_type", "type"};
  if (prefix == "rope_parameters") allowed.insert("rope_theta");
  switch (s.type) {
    case RopeType::kNone:
      break;
    case RopeType::kLinear:
      allowed.insert({"factor", "original_max_position_embeddings"});
      break;
    case RopeType::kLlama3:
      allowed.insert(
          {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
      break;
    case RopeType::kYarn:
      allowed.insert({"factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
                      "attention_factor", "mscale", "mscale_all_dim", "truncate"});
      break;
  }
  for (const auto& [key, value] : r.items()) {
    if (!allowed.contains(key)) {
      return Invalid(prefix + "." + key, "unsupported " + prefix + " parameter " + Quote(key) +
                                             " for type " + Quote(*type_name));
    }
  }
  auto required_double = [&](const char* key, double& out) -> Status {
    const std::string path = prefix + "." + key;
    SLUICE_ASSIGN_OR_RETURN(std::optional<double> v, ReadDouble(r, key, path));
    if (!v) return Invalid(path, path + " is required for type " + Quote(*type_name));
    out = *v;
    return Status::Ok();
  };
  if (s.type != RopeType::kNone) SLUICE_RETURN_IF_ERROR(required_double("factor", s.factor));
  if (s.type == RopeType::kLlama3) {
    SLUICE_RETURN_IF_ERROR(required_double("low_freq_factor", s.low_freq_factor));
    SLUICE_RETURN_IF_ERROR(required_double("high_freq_factor", s.high_freq_factor));
  }
  SLUICE_ASSIGN_OR_RETURN(
      s.original_max_position_embeddings,
      ReadInt(r, "original_max_position_embeddings", prefix + ".original_max_position_embeddings"));
  if (s.type == RopeType::kLlama3 && !s.original_max_position_embeddings) {
    return Invalid(prefix + ".original_max_position_embeddings",
                   prefix + ".original_max_position_embeddings is required for type \"llama3\"");
  }
  if (s.type == RopeType::kYarn) {
    // HF treats 0 like absent here ("or 32").
    SLUICE_ASSIGN_OR_RETURN(std::optional<double> fast,
                            ReadDouble(r, "beta_fast", prefix + ".beta_fast"));
    SLUICE_ASSIGN_OR_RETURN(std::optional<double> slow,
                            ReadDouble(r, "beta_slow", prefix + ".beta_slow"));
    if (fast && *fast != 0) s.beta_fast = *fast;
    if (slow && *slow != 0) s.beta_slow = *slow;
    SLUICE_ASSIGN_OR_RETURN(s.attention_factor,
                            ReadDouble(r, "attention_factor", prefix + ".attention_factor"));
    SLUICE_ASSIGN_OR_RETURN(s.mscale, ReadDouble(r, "mscale", prefix + ".mscale"));
    SLUICE_ASSIGN_OR_RETURN(s.mscale_all_dim,
                            ReadDouble(r, "mscale_all_dim", prefix + ".mscale_all_dim"));
    SLUICE_ASSIGN_OR_RETURN(std::optional<bool> truncate,
                            ReadBool(r, "truncate", prefix + ".truncate"));
    s.truncate = truncate.value_or(true);
  }
  if (prefix == "rope_parameters") {
    SLUICE_ASSIGN_OR_RETURN(std::optional<double> theta,
                            ReadDouble(r, "rope_theta", prefix + ".rope_theta"));
    if (theta) c.rope_theta = *theta;
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> ReadTokenId(const json& j, const std::string& key) {
  return ReadInt(j, key, key);
}

// Refuses `key` when present with a value other than `ok_value` (booleans).
Status RefuseBoolUnless(const json& j, const std::string& key, bool ok_value,
                        std::string_view why) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<bool> v, ReadBool(j, key, key));
  if (v && *v != ok_value) {
    return Invalid(
        key, key + "=" + (*v ? "true" : "false") + " is not supported (" + std::string(why) + ")");
  }
  return Status::Ok();
}

bool Positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

std::string_view ModelTypeName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "unknown";
}

std::string_view ArchitectureClassName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "LlamaForCausalLM";
    case Architecture::kQwen2:
      return "Qwen2ForCausalLM";
    case Architecture::kQwen3:
      return "Qwen3ForCausalLM";
  }
  return "unknown";
}

int64_t ModelConfig::NumParameters() const {
  const int64_t d = hidden_size;
  int64_t per_layer = d * q_width() + 2 * d * kv_width() + q_width() * d;  // q, k, v, o
  if (qkv_bias()) per_layer += q_width() + 2 * kv_width();
  if (o_bias()) per_layer += d;
  if (qk_norm) per_layer += 2 * head_dim;
  per_layer += 3 * d * intermediate_size;  // gate, up, down
  per_layer += 2 * d;                      // input and post-attention norms
  int64_t total = vocab_size * d + num_hidden_layers * per_layer + d;
  if (!tie_word_embeddings) total += vocab_size * d;
  return total;
}

Status ValidateModelConfig(const ModelConfig& c) {
  auto positive = [](int64_t v, const char* field) -> Status {
    if (v <= 0) {
      return Invalid(field, std::string(field) + " must be positive, got " + std::to_string(v));
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(positive(c.vocab_size, "vocab_size"));
  SLUICE_RETURN_IF_ERROR(positive(c.hidden_size, "hidden_size"));
  SLUICE_RETURN_IF_ERROR(positive(c.intermediate_size, "intermediate_size"));
  SLUICE_RETURN_IF_ERROR(positive(c.num_hidden_layers, "num_hidden_layers"));
  SLUICE_RETURN_IF_ERROR(positive(c.num_attention_heads, "num_attention_heads"));
  SLUICE_RETURN_IF_ERROR(positive(c.num_key_value_heads, "num_key_value_heads"));
  SLUICE_RETURN_IF_ERROR(positive(c.head_dim, "head_dim"));
  SLUICE_RETURN_IF_ERROR(positive(c.max_position_embeddings, "max_position_embeddings"));
  if (!c.head_dim_explicit) {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return Invalid("num_attention_heads",
                     "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                         ") must divide hidden_size (" + std::to_string(c.hidden_size) +
                         ") when head_dim is not given");
    }
    if (c.head_dim != c.hidden_size / c.num_attention_heads) {
      return Invalid("head_dim", "head_dim (" + std::to_string(c.head_dim) +
                                     ") must be hidden_size / num_attention_heads (" +
                                     std::to_string(c.hidden_size / c.num_attention_heads) +
                                     ") when not given explicitly");
    }
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return Invalid("num_key_value_heads", "num_key_value_heads (" +
                                              std::to_string(c.num_key_value_heads) +
                                              ") must divide num_attention_heads (" +
                                              std::to_string(c.num_attention_heads) + ")");
  }
  if (c.head_dim % 2 != 0) {
    return Invalid("head_dim", "head_dim must be even for rotary embeddings, got " +
                                   std::to_string(c.head_dim));
  }
  if (!Positive(c.rms_norm_eps)) return Invalid("rms_norm_eps", "rms_norm_eps must be > 0");
  if (!std::isfinite(c.rope_theta) || c.rope_theta <= 1.0) {
    return Invalid("rope_theta", "rope_theta must be > 1");
  }
  if (c.hidden_act != "silu") {
    return Invalid("hidden_act",
                   "unsupported hidden_act " + Quote(c.hidden_act) + " (only \"silu\")");
  }
  if (c.use_sliding_window) {
    return Invalid("use_sliding_window", "use_sliding_window=true is not supported");
  }
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16") {
    return Invalid("torch_dtype", "unsupported torch_dtype " + Quote(c.torch_dtype) +
                                      " (supported: float32, float16, bfloat16)");
  }
  auto check_id = [&](int64_t id, const char* field) -> Status {
    if (id < 0 || id >= c.vocab_size) {
      return Invalid(field, std::string(field) + " " + std::to_string(id) +
                                " is outside the vocabulary [0, " + std::to_string(c.vocab_size) +
                                ")");
    }
    return Status::Ok();
  };
  if (c.bos_token_id) SLUICE_RETURN_IF_ERROR(check_id(*c.bos_token_id, "bos_token_id"));
  for (int64_t id : c.eos_token_ids) SLUICE_RETURN_IF_ERROR(check_id(id, "eos_token_id"));
  if (c.pad_token_id) SLUICE_RETURN_IF_ERROR(check_id(*c.pad_token_id, "pad_token_id"));
  if (c.eos_token_ids.size() > 1 && !c.eos_token_id_is_list) {
    return Invalid("eos_token_id", "several eos_token_id values need eos_token_id_is_list");
  }

  const RopeScaling& s = c.rope_scaling;
  if (s.type != RopeType::kNone && !Positive(s.factor)) {
    return Invalid("rope_scaling.factor", "rope_scaling.factor must be > 0");
  }
  if (s.original_max_position_embeddings && *s.original_max_position_embeddings <= 0) {
    return Invalid("rope_scaling.original_max_position_embeddings",
                   "rope_scaling.original_max_position_embeddings must be positive");
  }
  if (s.type == RopeType::kLlama3) {
    if (!s.original_max_position_embeddings) {
      return Invalid("rope_scaling.original_max_position_embeddings",
                     "rope_scaling.original_max_position_embeddings is required for llama3");
    }
    if (!Positive(s.low_freq_factor)) {
      return Invalid("rope_scaling.low_freq_factor", "rope_scaling.low_freq_factor must be > 0");
    }
    if (!std::isfinite(s.high_freq_factor) || s.high_freq_factor <= s.low_freq_factor) {
      return Invalid("rope_scaling.high_freq_factor",
                     "rope_scaling.high_freq_factor must be > low_freq_factor");
    }
  }
  if (s.type == RopeType::kYarn) {
    if (!Positive(s.beta_fast)) {
      return Invalid("rope_scaling.beta_fast", "rope_scaling.beta_fast must be > 0");
    }
    if (!Positive(s.beta_slow) || s.beta_slow > s.beta_fast) {
      return Invalid("rope_scaling.beta_slow",
                     "rope_scaling.beta_slow must be > 0 and <= beta_fast");
    }
    if (s.attention_factor && !Positive(*s.attention_factor)) {
      return Invalid("rope_scaling.attention_factor", "rope_scaling.attention_factor must be > 0");
    }
    if (s.mscale && !std::isfinite(*s.mscale)) {
      return Invalid("rope_scaling.mscale", "rope_scaling.mscale must be finite");
    }
    if (s.mscale_all_dim && !std::isfinite(*s.mscale_all_dim)) {
      return Invalid("rope_scaling.mscale_all_dim", "rope_scaling.mscale_all_dim must be finite");
    }
  }

  switch (c.architecture) {
    case Architecture::kLlama:
      if (c.qk_norm) return Invalid("qk_norm", "llama has no q/k norm (qk_norm must be false)");
      break;
    case Architecture::kQwen2:
      if (c.qk_norm) return Invalid("qk_norm", "qwen2 has no q/k norm (qk_norm must be false)");
      if (!c.attention_bias) {
        return Invalid("attention_bias", "qwen2 always has q/k/v biases (attention_bias true)");
      }
      break;
    case Architecture::kQwen3:
      if (!c.qk_norm) return Invalid("qk_norm", "qwen3 always has q/k norms (qk_norm true)");
      break;
  }
  return Status::Ok();
}

Result<ModelConfig> ParseHfConfig(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("config.json must be a JSON object");
  ModelConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.architecture, ReadArchitecture(j, c));
  const Architecture arch = c.architecture;

  // Refusals of math Sluice does not implement, before anything that might be misleading.
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> act,
                          ReadString(j, "hidden_act", "hidden_act"));
  if (act && *act != "silu") {
    return Invalid("hidden_act", "unsupported hidden_act " + Quote(*act) + " (only \"silu\")");
  }
  SLUICE_RETURN_IF_ERROR(RefuseBoolUnless(j, "use_sliding_window", false,
                                          "sliding-window attention is not implemented"));
  SLUICE_RETURN_IF_ERROR(
      RefuseBoolUnless(j, "mlp_bias", false, "the MLP projections have no biases"));
  SLUICE_RETURN_IF_ERROR(
      RefuseBoolUnless(j, "use_mrope", false, "multimodal rotary is not implemented"));
  if (const json* lt = Find(j, "layer_types"); lt != nullptr) {
    if (!lt->is_array()) return Invalid("layer_types", "layer_types must be a list of strings");
    for (const json& t : *lt) {
      if (!t.is_string() || t.get<std::string>() != "full_attention") {
        return Invalid("layer_types", "layer_types entry " + t.dump() +
                                          " is not supported (only \"full_attention\")");
      }
    }
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<double> partial,
                          ReadDouble(j, "partial_rotary_factor", "partial_rotary_factor"));
  if (partial && *partial != 1.0) {
    return Invalid("partial_rotary_factor", "partial_rotary_factor " + std::to_string(*partial) +
                                                " is not supported (only 1)");
  }
  if (Find(j, "quantization_config") != nullptr) {
    return Invalid("quantization_config",
                   "quantized checkpoints (quantization_config) are not "
                   "supported");
  }
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (Find(j, key) != nullptr) {
      return Invalid(key, std::string(key) + " (logit soft-capping) is not supported");
    }
  }
  for (const char* key : {"num_experts", "num_local_experts"}) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> experts, ReadInt(j, key, key));
    if (experts && *experts > 0) {
      return Invalid(key, std::string(key) + " (mixture of experts) is not supported");
    }
  }

  SLUICE_ASSIGN_OR_RETURN(c.vocab_size, RequireInt(j, "vocab_size"));
  SLUICE_ASSIGN_OR_RETURN(c.hidden_size, RequireInt(j, "hidden_size"));
  SLUICE_ASSIGN_OR_RETURN(c.intermediate_size, RequireInt(j, "intermediate_size"));
  SLUICE_ASSIGN_OR_RETURN(c.num_hidden_layers, RequireInt(j, "num_hidden_layers"));
  SLUICE_ASSIGN_OR_RETURN(c.num_attention_heads, RequireInt(j, "num_attention_heads"));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> kv,
                          ReadInt(j, "num_key_value_heads", "num_key_value_heads"));
  c.num_key_value_heads = kv.value_or(c.num_attention_heads);
  SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, ReadInt(j, "head_dim", "head_dim"));
  if (head_dim) {
    c.head_dim = *head_dim;
    c.head_dim_explicit = true;
  } else if (arch == Architecture::kQwen3) {
    c.head_dim = 128;  // transformers' Qwen3Config default.
    c.head_dim_explicit = true;
  } else if (c.num_attention_heads > 0) {
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }

  SLUICE_ASSIGN_OR_RETURN(std::optional<double> eps, ReadDouble(j, "rms_norm_eps", "rms_norm_eps"));
  c.rms_norm_eps = eps.value_or(1e-6);
  SLUICE_ASSIGN_OR_RETURN(std::optional<double> theta, ReadDouble(j, "rope_theta", "rope_theta"));
  c.rope_theta = theta.value_or(10000.0);
  if (const json* rp = Find(j, "rope_parameters"); rp != nullptr) {
    SLUICE_RETURN_IF_ERROR(ReadRope(*rp, "rope_parameters", c));
  } else if (const json* rs = Find(j, "rope_scaling"); rs != nullptr) {
    SLUICE_RETURN_IF_ERROR(ReadRope(*rs, "rope_scaling", c));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> max_pos,
                          ReadInt(j, "max_position_embeddings", "max_position_embeddings"));
  c.max_position_embeddings = max_pos.value_or(arch == Architecture::kLlama ? 2048 : 32768);
  SLUICE_ASSIGN_OR_RETURN(std::optional<bool> tie,
                          ReadBool(j, "tie_word_embeddings", "tie_word_embeddings"));
  c.tie_word_embeddings = tie.value_or(false);

  if (arch == Architecture::kQwen2) {
    c.attention_bias = true;
  } else {
    SLUICE_ASSIGN_OR_RETURN(std::optional<bool> bias,
                            ReadBool(j, "attention_bias", "attention_bias"));
    c.attention_bias = bias.value_or(false);
  }
  c.qk_norm = arch == Architecture::kQwen3;
  c.hidden_act = act.value_or("silu");

  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> dtype, ReadString(j, "dtype", "dtype"));
  if (!dtype) {
    SLUICE_ASSIGN_OR_RETURN(dtype, ReadString(j, "torch_dtype", "torch_dtype"));
  }
  c.torch_dtype = dtype.value_or("");

  SLUICE_ASSIGN_OR_RETURN(c.bos_token_id, ReadTokenId(j, "bos_token_id"));
  SLUICE_ASSIGN_OR_RETURN(c.pad_token_id, ReadTokenId(j, "pad_token_id"));
  if (c.pad_token_id && *c.pad_token_id < 0) c.pad_token_id.reset();  // Old Llama exports: -1.
  if (const json* eos = Find(j, "eos_token_id"); eos != nullptr) {
    if (eos->is_array()) {
      c.eos_token_id_is_list = true;
      for (const json& e : *eos) {
        SLUICE_ASSIGN_OR_RETURN(int64_t id, AsInt(e, "eos_token_id"));
        c.eos_token_ids.push_back(id);
      }
    } else {
      SLUICE_ASSIGN_OR_RETURN(int64_t id, AsInt(*eos, "eos_token_id"));
      c.eos_token_ids.push_back(id);
    }
  }

  SLUICE_ASSIGN_OR_RETURN(std::optional<bool> sliding,
                          ReadBool(j, "use_sliding_window", "use_sliding_window"));
  c.use_sliding_window = sliding.value_or(false);
  SLUICE_ASSIGN_OR_RETURN(c.sliding_window, ReadInt(j, "sliding_window", "sliding_window"));
  SLUICE_ASSIGN_OR_RETURN(c.max_window_layers,
                          ReadInt(j, "max_window_layers", "max_window_layers"));

  for (const auto& [key, value] : j.items()) {
    if (ParsedFields().contains(key) || KnownFields().contains(key)) continue;
    c.ignored_fields.push_back(key);
  }
  if (arch == Architecture::kQwen2 && j.contains("attention_bias")) {
    c.ignored_fields.push_back("attention_bias");  // transformers' Qwen2 does not read it.
  }
  if (j.contains("rope_parameters") && Find(j, "rope_scaling") != nullptr) {
    c.ignored_fields.push_back("rope_scaling");  // rope_parameters wins.
  }
  std::sort(c.ignored_fields.begin(), c.ignored_fields.end());

  SLUICE_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

Result<ModelConfig> LoadHfConfig(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path(dir_or_file);
  if (fs::is_directory(path, ec)) path /= "config.json";
  if (!fs::is_regular_file(path, ec)) {
    return Status::NotFound(path.string() + ": no such config file");
  }
  Result<std::string> text = file::ReadWholeFile(path.string());
  if (!text.ok()) return Status::NotFound(path.string() + ": cannot open");
  // Refused before parsing: the parse is fine, but errors print values and compare them,
  // recursively, once per level.
  if (const std::optional<size_t> at = FirstTooDeepJson(*text)) {
    return Status::InvalidArgument(path.string() + ": nests deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                   std::to_string(*at) + ")");
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status::InvalidArgument(path.string() + ": not valid JSON");
  }
  Result<ModelConfig> result = ParseHfConfig(j);
  if (!result.ok()) return result.status().WithContext(path.string());
  return result;
}

nlohmann::json ToHfConfig(const ModelConfig& c) {
  json j = json::object();
  j["architectures"] = json::array({std::string(ArchitectureClassName(c.architecture))});
  j["model_type"] = std::string(ModelTypeName(c.architecture));
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  // qwen3 always: its class default (128) is not hidden_size / heads.
  if (c.head_dim_explicit || c.architecture == Architecture::kQwen3) j["head_dim"] = c.head_dim;
  j["hidden_act"] = c.hidden_act;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.architecture != Architecture::kQwen2) j["attention_bias"] = c.attention_bias;
  if (c.architecture == Architecture::kLlama) j["mlp_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["initializer_range"] = 0.02;
  j["use_cache"] = true;

  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeType::kNone) {
    j["rope_scaling"] = nullptr;
  } else {
    json r = json::object();
    r["rope_type"] = std::string(RopeTypeName(s.type));
    r["type"] = std::string(RopeTypeName(s.type));  // Older transformers read "type".
    r["factor"] = s.factor;
    if (s.original_max_position_embeddings) {
      r["original_max_position_embeddings"] = *s.original_max_position_embeddings;
    }
    if (s.type == RopeType::kLlama3) {
      r["low_freq_factor"] = s.low_freq_factor;
      r["high_freq_factor"] = s.high_freq_factor;
    }
    if (s.type == RopeType::kYarn) {
      r["beta_fast"] = s.beta_fast;
      r["beta_slow"] = s.beta_slow;
      if (s.attention_factor) r["attention_factor"] = *s.attention_factor;
      if (s.mscale) r["mscale"] = *s.mscale;
      if (s.mscale_all_dim) r["mscale_all_dim"] = *s.mscale_all_dim;
      if (!s.truncate) r["truncate"] = false;
    }
    j["rope_scaling"] = std::move(r);
  }

  if (c.architecture != Architecture::kLlama || c.sliding_window || c.max_window_layers) {
    j["use_sliding_window"] = c.use_sliding_window;
  }
  if (c.sliding_window) j["sliding_window"] = *c.sliding_window;
  if (c.max_window_layers) j["max_window_layers"] = *c.max_window_layers;
  if (!c.torch_dtype.empty()) j["torch_dtype"] = c.torch_dtype;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id_is_list) {
    j["eos_token_id"] = c.eos_token_ids;
  } else if (!c.eos_token_ids.empty()) {
    j["eos_token_id"] = c.eos_token_ids.front();
  }
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  return j;
}

}  // namespace sluice::model
