// Model configuration: the shape and math options of a decoder-only transformer of the Llama,
// Qwen2 or Qwen3 family, read from and written to a Hugging Face `config.json` (model_config.cpp),
// plus the built-in tiny models (builtin_models.cpp). The rope_scaling parameters and the rotary
// frequency math are in rope_scaling.h, included here. No libtorch: the torch model is built from
// a ModelConfig, and everything here is plain data and arithmetic.
//
// Families (what differs between them; everything else is shared: pre-norm RMSNorm blocks,
// rotary embeddings on the first and second halves of each head ("rotate_half"), grouped-query
// attention, SwiGLU MLP `down(silu(gate(x)) * up(x))` without biases, final RMSNorm):
//   llama  model_type "llama", LlamaForCausalLM. attention_bias (default false) puts a bias on
//          q, k, v AND o projections. head_dim optional (default hidden_size / heads).
//   qwen2  model_type "qwen2", Qwen2ForCausalLM. q, k, v projections always have a bias, o none
//          (transformers hard-codes this; an "attention_bias" field is not read and is listed in
//          ignored_fields). head_dim = hidden_size / heads unless given.
//   qwen3  model_type "qwen3", Qwen3ForCausalLM. Per-head RMSNorm on q and k (over head_dim,
//          before rotary) always; attention_bias as llama (q, k, v, o); head_dim defaults to 128
//          when absent (as transformers' Qwen3Config does), not to hidden_size / heads.
//
// Parsing policy (ParseHfConfig). Every top-level key falls in one of four classes:
//   1. Parsed: the fields of ModelConfig (see ParsedFields() in the .cpp), each type-checked; a
//      wrong type or out-of-range value is an InvalidArgument naming the field.
//   2. Refused when set to a value that changes the math in a way Sluice does not implement:
//      hidden_act other than "silu", rope_scaling types other than default/linear/llama3/yarn
//      ("dynamic", "longrope", "ntk", "mrope", ...), use_sliding_window true, layer_types other
//      than all "full_attention", mlp_bias true, use_mrope true, partial_rotary_factor other than
//      1, any quantization_config, torch_dtype outside float32/float16/bfloat16, logit
//      soft-capping, mixture-of-experts fields. The error is InvalidArgument with field() naming
//      the key.
//   3. Known not to matter for the math and accepted silently: bookkeeping (transformers_version,
//      _name_or_path, use_cache, initializer_range, tokenizer_class, output_* flags, ...),
//      attention_dropout (any value: Sluice never applies dropout, neither in rollout nor in
//      training), pretraining_tp (a tensor-parallel slicing of the same matmuls), and
//      sliding_window / max_window_layers (only read when use_sliding_window is true, which is
//      refused; kept for round trips).
//   4. Anything else: accepted, and its key appended to ModelConfig::ignored_fields (sorted) so
//      callers can log it. Real checkpoints carry assorted metadata; refusing every unknown key
//      would refuse real models, while listing them keeps a silent mismatch visible. Keys
//      inside rope_scaling are all math, so an unknown key there is refused instead.
// Required fields (an absent or null one is an error naming it, where transformers would fill a
// class default): vocab_size, hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads. Optional ones default as the family's transformers config class does:
// num_key_value_heads = num_attention_heads, rms_norm_eps 1e-6, rope_theta 10000,
// max_position_embeddings 2048 (llama) / 32768 (qwen2, qwen3), tie_word_embeddings false.
// transformers v5's "rope_parameters" object (rope_type, rope_theta and the scaling fields) is
// read too and takes precedence over rope_scaling / rope_theta; "dtype" is read as torch_dtype.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/model/char_tokenizer.h"
#include "workers/model/rope_scaling.h"

namespace sluice::model {

enum class Architecture : uint8_t { kLlama, kQwen2, kQwen3 };

// "llama", "qwen2", "qwen3": the HF model_type.
std::string_view ModelTypeName(Architecture arch);
// "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM".
std::string_view ArchitectureClassName(Architecture arch);

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  // As read from config.json (empty when absent); ToHfConfig writes the canonical ones.
  std::string model_type;
  std::vector<std::string> architectures;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // GQA; ParseHfConfig defaults it to num_attention_heads.
  int64_t head_dim = 0;             // Per-head width of q, k, v.
  // True when config.json gave head_dim (or, for qwen3, when it defaulted to 128); then
  // hidden_size need not equal heads * head_dim.
  bool head_dim_explicit = false;

  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;

  bool tie_word_embeddings = false;  // lm_head shares embed_tokens' weight.
  // Bias on the attention projections: q, k, v (all families) and o (llama and qwen3 only; see
  // qkv_bias() / o_bias()). Always true for qwen2.
  bool attention_bias = false;
  bool qk_norm = false;  // Per-head RMSNorm of q and k; true exactly for qwen3.
  std::string hidden_act = "silu";
  // "float32", "float16", "bfloat16", or empty when config.json does not say.
  std::string torch_dtype;

  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // Empty when none.
  bool eos_token_id_is_list = false;   // config.json gave a list (written back as one).
  std::optional<int64_t> pad_token_id;

  // Sliding-window attention is not supported: use_sliding_window must be false. The other two
  // are carried for round trips.
  bool use_sliding_window = false;
  std::optional<int64_t> sliding_window;
  std::optional<int64_t> max_window_layers;

  // Unknown top-level keys of the parsed config.json, sorted (see the policy above).
  std::vector<std::string> ignored_fields;

  bool qkv_bias() const { return attention_bias; }
  bool o_bias() const { return attention_bias && architecture != Architecture::kQwen2; }
  int64_t q_width() const { return num_attention_heads * head_dim; }
  int64_t kv_width() const { return num_key_value_heads * head_dim; }
  // Parameter count of the model this config describes (the lm_head counted once when tied).
  int64_t NumParameters() const;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

// Checks a config for internal consistency. Each error is InvalidArgument with field() set:
// positive sizes; hidden_size divisible by num_attention_heads unless head_dim_explicit (and
// then head_dim == hidden_size / heads); num_attention_heads divisible by num_key_value_heads;
// even head_dim (rotary pairs channels); rms_norm_eps > 0; rope_theta > 1; the rope_scaling
// parameters of its type; token ids in [0, vocab_size); hidden_act "silu"; use_sliding_window
// false; family invariants (qwen2: attention_bias; qwen3: qk_norm; llama/qwen2: no qk_norm).
Status ValidateModelConfig(const ModelConfig& config);

// Reads an HF config.json object (see the policy above), fills defaults, validates.
Result<ModelConfig> ParseHfConfig(const nlohmann::json& json);

// Reads `<dir>/config.json` when given a directory, else the file itself. NotFound when absent;
// parse and validation errors carry the path as context.
Result<ModelConfig> LoadHfConfig(const std::string& dir_or_file);

// A config.json for the family that transformers' AutoConfig / AutoModelForCausalLM accept:
// model_type, architectures, every field of ModelConfig. ParseHfConfig(ToHfConfig(c)) equals c
// up to model_type/architectures (canonical) and ignored_fields (empty).
nlohmann::json ToHfConfig(const ModelConfig& config);

// Built-in tiny models, for CPU training runs and tests:
//   builtin:tiny?layers=2&d=128&heads=4&vocab=char
// Parameters (all optional; each at most once; an unknown one is an error naming it):
//   layers    num_hidden_layers                      default 2
//   d         hidden_size                            default 128
//   heads     num_attention_heads                    default 4 (head_dim = d / heads)
//   kv_heads  num_key_value_heads                    default heads
//   ff        intermediate_size                      default 4 * d
//   vocab     "char" (the character tokenizer's vocabulary, kBuiltinCharVocabSize) or a
//             positive integer                       default char
//   family    llama | qwen3 (qwen3 adds the q/k norms) default llama
//   max_pos   max_position_embeddings                default 2048
//   theta     rope_theta                             default 10000
//   tie       tie_word_embeddings: true|false|1|0    default false
//   seed      weight-init seed, a uint64             default 0
// Integers are decimal; sizes are bounded (kBuiltinMaxDim etc.) so a typo cannot allocate
// terabytes. The config has rms_norm_eps 1e-6, torch_dtype "float32", no rope scaling, and, with
// vocab=char, the character tokenizer's special ids as bos/eos/pad.
struct BuiltinModelSpec {
  std::string name;  // "tiny".
  ModelConfig config;
  uint64_t seed = 0;
  bool char_vocab = true;  // vocab=char.
};

// The character tokenizer's vocabulary (char_tokenizer.h): 256 byte tokens (id = byte value) and
// the specials <pad> = 256, <bos> = 257, <eos> = 258, then chat-role tokens; 264 ids in all.
inline constexpr int64_t kBuiltinCharVocabSize = CharTokenizer::kVocabSize;
inline constexpr int64_t kBuiltinCharBosId = CharTokenizer::kBos;
inline constexpr int64_t kBuiltinCharEosId = CharTokenizer::kEos;
inline constexpr int64_t kBuiltinCharPadId = CharTokenizer::kPad;
inline constexpr int64_t kBuiltinMaxDim = 1 << 16;        // d, ff, heads, kv_heads
inline constexpr int64_t kBuiltinMaxLayers = 1 << 10;     // layers
inline constexpr int64_t kBuiltinMaxPositions = 1 << 24;  // max_pos
inline constexpr int64_t kBuiltinMaxVocab = 1 << 24;      // vocab

Result<BuiltinModelSpec> ParseBuiltinModel(std::string_view uri);

}  // namespace sluice::model
