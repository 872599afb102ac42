// Model shapes the GPU benchmarks run with random weights: Qwen3-0.6B and Qwen3-1.7B as their
// published config.json files give them, and a tiny Qwen3-shaped model for the CPU dry run that
// proves the benchmarks' code before a GPU session spends device time on it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workers/model/model_config.h"

namespace sluice::bench {

struct NamedShape {
  std::string name;
  model::ModelConfig config;
};

inline model::ModelConfig Qwen3Config(int64_t hidden, int64_t intermediate, int64_t layers,
                                      int64_t heads, int64_t kv_heads, int64_t vocab) {
  const nlohmann::json j = {
      {"model_type", "qwen3"},
      {"architectures", {"Qwen3ForCausalLM"}},
      {"vocab_size", vocab},
      {"hidden_size", hidden},
      {"intermediate_size", intermediate},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads},
      {"head_dim", 128},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0},
      {"max_position_embeddings", 40960},
      {"tie_word_embeddings", true},
      {"attention_bias", false},
      {"hidden_act", "silu"},
      {"torch_dtype", "bfloat16"},
  };
  return model::ParseHfConfig(j).value();
}

// Qwen3-0.6B: d 1024, 28 layers, 16 q / 8 kv heads of 128, ff 3072; Qwen3-1.7B: d 2048, ff 6144,
// otherwise the same; both tie lm_head to the 151,936-token embedding.
inline std::vector<NamedShape> GpuShapes() {
  return {{"qwen3-0.6b", Qwen3Config(1024, 3072, 28, 16, 8, 151936)},
          {"qwen3-1.7b", Qwen3Config(2048, 6144, 28, 16, 8, 151936)}};
}

inline std::vector<NamedShape> DryRunShapes() {
  return {{"qwen3-tiny (dry run)", Qwen3Config(256, 512, 2, 4, 2, 4096)}};
}

// Parameters a token's forward multiplies by: every layer's projections plus lm_head (the
// embedding lookup reads one row; tied or not, lm_head is a full [vocab, d] product).
inline int64_t MatmulParameters(const model::ModelConfig& c) {
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  const int64_t per_layer =
      c.hidden_size * (q + 2 * kv) + q * c.hidden_size + 3 * c.hidden_size * c.intermediate_size;
  return c.num_hidden_layers * per_layer + c.vocab_size * c.hidden_size;
}

}  // namespace sluice::bench
