// ParseBuiltinModel (declared in model_config.h): the `builtin:tiny?...` model URIs of the
// built-in tiny models, parsed into a validated ModelConfig plus the weight-init seed. Separate
// from model_config.cpp, which reads Hugging Face config.json files.
#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>

#include "common/status.h"
#include "workers/model/model_config.h"
#include "workers/model/model_config_internal.h"

namespace sluice::model {
namespace {

using config_internal::Invalid;
using config_internal::Quote;

Result<int64_t> ParseBoundedInt(std::string_view name, std::string_view value, int64_t lo,
                                int64_t hi) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
    return Invalid(std::string(name), "builtin model parameter " + std::string(name) +
                                          " must be an integer in [" + std::to_string(lo) + ", " +
                                          std::to_string(hi) + "], got " + Quote(value));
  }
  return v;
}

}  // namespace

Result<BuiltinModelSpec> ParseBuiltinModel(std::string_view uri) {
  constexpr std::string_view kScheme = "builtin:";
  if (!uri.starts_with(kScheme)) {
    return Status::InvalidArgument("builtin model URI must start with \"builtin:\", got " +
                                   Quote(uri));
  }
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view name = rest;
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    name = rest.substr(0, q);
    query = rest.substr(q + 1);
  }
  if (name != "tiny") {
    return Invalid("name", "unknown builtin model " + Quote(name) + " (known: tiny)");
  }

  int64_t layers = 2, d = 128, heads = 4, max_pos = 2048;
  std::optional<int64_t> kv_heads, ff, vocab;
  double theta = 10000.0;
  bool tie = false;
  uint64_t seed = 0;
  Architecture arch = Architecture::kLlama;
  std::set<std::string, std::less<>> seen;

  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos || eq == 0) {
      return Status::InvalidArgument("builtin model parameter " + Quote(item) +
                                     " is not of the form name=value");
    }
    const std::string key(item.substr(0, eq));
    const std::string_view value = item.substr(eq + 1);
    if (!seen.insert(key).second) {
      return Invalid(key, "builtin model parameter " + key + " is given twice");
    }
    if (key == "layers") {
      SLUICE_ASSIGN_OR_RETURN(layers, ParseBoundedInt(key, value, 1, kBuiltinMaxLayers));
    } else if (key == "d") {
      SLUICE_ASSIGN_OR_RETURN(d, ParseBoundedInt(key, value, 1, kBuiltinMaxDim));
    } else if (key == "heads") {
      SLUICE_ASSIGN_OR_RETURN(heads, ParseBoundedInt(key, value, 1, kBuiltinMaxDim));
    } else if (key == "kv_heads") {
      SLUICE_ASSIGN_OR_RETURN(kv_heads, ParseBoundedInt(key, value, 1, kBuiltinMaxDim));
    } else if (key == "ff") {
      SLUICE_ASSIGN_OR_RETURN(ff, ParseBoundedInt(key, value, 1, kBuiltinMaxDim));
    } else if (key == "max_pos") {
      SLUICE_ASSIGN_OR_RETURN(max_pos, ParseBoundedInt(key, value, 1, kBuiltinMaxPositions));
    } else if (key == "vocab") {
      if (value != "char") {
        SLUICE_ASSIGN_OR_RETURN(vocab, ParseBoundedInt(key, value, 1, kBuiltinMaxVocab));
      }
    } else if (key == "family") {
      if (value == "llama") {
        arch = Architecture::kLlama;
      } else if (value == "qwen3") {
        arch = Architecture::kQwen3;
      } else {
        return Invalid(key, "builtin model family must be llama or qwen3, got " + Quote(value));
      }
    } else if (key == "theta") {
      SLUICE_ASSIGN_OR_RETURN(int64_t t, ParseBoundedInt(key, value, 2, int64_t{1} << 40));
      theta = static_cast<double>(t);
    } else if (key == "tie") {
      if (value == "true" || value == "1") {
        tie = true;
      } else if (value == "false" || value == "0") {
        tie = false;
      } else {
        return Invalid(
            key, "builtin model parameter tie must be true, false, 1 or 0, got " + Quote(value));
      }
    } else if (key == "seed") {
      const char* end = value.data() + value.size();
      auto [ptr, ec] = std::from_chars(value.data(), end, seed);
      if (value.empty() || ec != std::errc() || ptr != end) {
        return Invalid(key,
                       "builtin model parameter seed must be an unsigned 64-bit integer, "
                       "got " +
                           Quote(value));
      }
    } else {
      return Invalid(key, "unknown builtin model parameter " + Quote(key) +
                              " (known: layers, d, heads, kv_heads, ff, vocab, family, "
                              "max_pos, theta, tie, seed)");
    }
  }

  if (d % heads != 0) {
    return Invalid("heads", "builtin model: heads (" + std::to_string(heads) + ") must divide d (" +
                                std::to_string(d) + ")");
  }
  if ((d / heads) % 2 != 0) {
    return Invalid("heads", "builtin model: the head width d / heads (" +
                                std::to_string(d / heads) + ") must be even for rotary");
  }
  if (kv_heads && heads % *kv_heads != 0) {
    return Invalid("kv_heads", "builtin model: kv_heads (" + std::to_string(*kv_heads) +
                                   ") must divide heads (" + std::to_string(heads) + ")");
  }

  BuiltinModelSpec spec;
  spec.name = std::string(name);
  spec.seed = seed;
  spec.char_vocab = !vocab.has_value();
  ModelConfig& c = spec.config;
  c.architecture = arch;
  c.model_type = std::string(ModelTypeName(arch));
  c.architectures = {std::string(ArchitectureClassName(arch))};
  c.vocab_size = vocab.value_or(kBuiltinCharVocabSize);
  c.hidden_size = d;
  c.intermediate_size = ff.value_or(4 * d);
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads.value_or(heads);
  c.head_dim = d / heads;
  c.head_dim_explicit = arch == Architecture::kQwen3;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = theta;
  c.max_position_embeddings = max_pos;
  c.tie_word_embeddings = tie;
  c.attention_bias = false;
  c.qk_norm = arch == Architecture::kQwen3;
  c.torch_dtype = "float32";
  if (spec.char_vocab) {
    c.bos_token_id = kBuiltinCharBosId;
    c.eos_token_ids = {kBuiltinCharEosId};
    c.pad_token_id = kBuiltinCharPadId;
  }
  SLUICE_RETURN_IF_ERROR(ValidateModelConfig(c));
  return spec;
}

}  // namespace sluice::model
