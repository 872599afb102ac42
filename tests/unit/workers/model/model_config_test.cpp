#include "workers/model/model_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

namespace sluice::model {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Shaped like meta-llama/Llama-3.2-1B's config.json.
json Llama32_1B() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": false,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 8192,
    "max_position_embeddings": 131072,
    "mlp_bias": false,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
      "factor": 32.0,
      "high_freq_factor": 4.0,
      "low_freq_factor": 1.0,
      "original_max_position_embeddings": 8192,
      "rope_type": "llama3"
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": true,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0",
    "use_cache": true,
    "vocab_size": 128256
  })");
}

// Shaped like Qwen/Qwen2.5-0.5B's config.json.
json Qwen25_05B() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 896,
    "initializer_range": 0.02,
    "intermediate_size": 4864,
    "max_position_embeddings": 32768,
    "max_window_layers": 24,
    "model_type": "qwen2",
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": true,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": true,
    "use_mrope": false,
    "use_sliding_window": false,
    "vocab_size": 151936
  })");
}

// Shaped like Qwen/Qwen3-0.6B's config.json.
json Qwen3_06B() {
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": false,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 40960,
    "max_window_layers": 28,
    "model_type": "qwen3",
    "num_attention_heads": 16,
    "num_hidden_layers": 28,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": null,
    "rope_theta": 1000000,
    "sliding_window": null,
    "tie_word_embeddings": true,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": true,
    "use_sliding_window": false,
    "vocab_size": 151936
  })");
}

ModelConfig MustParse(const json& j) {
  Result<ModelConfig> r = ParseHfConfig(j);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ModelConfig{};
}

TEST(ModelConfigTest, ParsesLlama32Shaped) {
  ModelConfig c = MustParse(Llama32_1B());
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_THAT(c.architectures, ElementsAre("LlamaForCausalLM"));
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 8192);
  EXPECT_EQ(c.num_hidden_layers, 16);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_TRUE(c.head_dim_explicit);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qkv_bias());
  EXPECT_FALSE(c.o_bias());
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(128001));
  EXPECT_FALSE(c.eos_token_id_is_list);
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_THAT(c.ignored_fields, IsEmpty());
  EXPECT_EQ(c.q_width(), 2048);
  EXPECT_EQ(c.kv_width(), 512);
  EXPECT_EQ(c.NumParameters(), 1235814400);  // Llama-3.2-1B's published count.
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.0);
}

TEST(ModelConfigTest, ParsesQwen25Shaped) {
  ModelConfig c = MustParse(Qwen25_05B());
  EXPECT_EQ(c.architecture, Architecture::kQwen2);
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.num_attention_heads, 14);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_FALSE(c.head_dim_explicit);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.qkv_bias());
  EXPECT_FALSE(c.o_bias());
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_scaling.type, RopeType::kNone);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.sliding_window, 32768);
  EXPECT_EQ(c.max_window_layers, 24);
  EXPECT_FALSE(c.use_sliding_window);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(151643));
  EXPECT_THAT(c.ignored_fields, IsEmpty());
  EXPECT_EQ(c.NumParameters(), 494032768);  // Qwen2.5-0.5B's published count.
}

TEST(ModelConfigTest, ParsesQwen3Shaped) {
  ModelConfig c = MustParse(Qwen3_06B());
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.head_dim, 128);  // Not hidden_size / heads (64).
  EXPECT_TRUE(c.head_dim_explicit);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_bias());
  EXPECT_EQ(c.q_width(), 2048);
  EXPECT_EQ(c.kv_width(), 1024);
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.max_window_layers, 28);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(151645));
  EXPECT_THAT(c.ignored_fields, IsEmpty());
  EXPECT_EQ(c.NumParameters(), 596049920);  // Qwen3-0.6B: 0.44B non-embedding + embeddings.
}

TEST(ModelConfigTest, EosListAndNegativePad) {
  json j = Llama32_1B();
  j["eos_token_id"] = json::array({128001, 128008, 128009});
  j["pad_token_id"] = -1;
  ModelConfig c = MustParse(j);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(128001, 128008, 128009));
  EXPECT_TRUE(c.eos_token_id_is_list);
  EXPECT_FALSE(c.pad_token_id.has_value());
  json out = ToHfConfig(c);
  EXPECT_EQ(out["eos_token_id"], json::array({128001, 128008, 128009}));
}

TEST(ModelConfigTest, DefaultsOfMinimalConfigs) {
  json llama = {{"model_type", "llama"},    {"vocab_size", 100},      {"hidden_size", 64},
                {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}};
  ModelConfig c = MustParse(llama);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.head_dim_explicit);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_TRUE(c.architectures.empty());

  // Family from architectures alone; qwen3's head_dim defaults to 128 as in transformers.
  json qwen3 = llama;
  qwen3.erase("model_type");
  qwen3["architectures"] = json::array({"Qwen3ForCausalLM"});
  c = MustParse(qwen3);
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.max_position_embeddings, 32768);

  // Nulls mean "not given".
  llama["num_key_value_heads"] = nullptr;
  llama["head_dim"] = nullptr;
  c = MustParse(llama);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
}

TEST(ModelConfigTest, UnknownFieldsAreReportedKnownOnesNot) {
  json j = Qwen3_06B();
  j["zz_custom_metadata"] = {{"a", 1}};
  j["foo_bar"] = 1;
  j["attention_dropout"] = 0.1;  // Accepted: dropout is never applied.
  j["_name_or_path"] = "/models/x";
  j["output_hidden_states"] = false;
  ModelConfig c = MustParse(j);
  EXPECT_THAT(c.ignored_fields, ElementsAre("foo_bar", "zz_custom_metadata"));

  // qwen2 does not read attention_bias (its q/k/v always have biases): reported.
  json q2 = Qwen25_05B();
  q2["attention_bias"] = false;
  c = MustParse(q2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_THAT(c.ignored_fields, ElementsAre("attention_bias"));
}

TEST(ModelConfigTest, ReadsTransformersV5RopeParameters) {
  json j = Qwen3_06B();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j.erase("torch_dtype");
  j["dtype"] = "float32";
  j["rope_parameters"] = {{"rope_type", "yarn"},
                          {"rope_theta", 1000000.0},
                          {"factor", 4.0},
                          {"original_max_position_embeddings", 32768}};
  ModelConfig c = MustParse(j);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(c.torch_dtype, "float32");
}

void ExpectRoundTrip(const ModelConfig& c) {
  SCOPED_TRACE(ToHfConfig(c).dump());
  Result<ModelConfig> back = ParseHfConfig(ToHfConfig(c));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ModelConfig expected = c;
  expected.ignored_fields.clear();
  EXPECT_THAT(back->ignored_fields, IsEmpty());
  EXPECT_TRUE(*back == expected);
}

TEST(ModelConfigTest, RoundTripsThroughHfConfig) {
  ExpectRoundTrip(MustParse(Llama32_1B()));
  ExpectRoundTrip(MustParse(Qwen25_05B()));
  ExpectRoundTrip(MustParse(Qwen3_06B()));

  json list_eos = Llama32_1B();
  list_eos["eos_token_id"] = json::array({128001, 128009});
  list_eos["pad_token_id"] = 128004;
  list_eos["attention_bias"] = true;
  list_eos.erase("head_dim");
  ExpectRoundTrip(MustParse(list_eos));

  json linear = Qwen25_05B();
  linear["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ExpectRoundTrip(MustParse(linear));

  json yarn = Qwen3_06B();
  yarn["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0},   {"original_max_position_embeddings", 32768},
      {"beta_fast", 16},     {"mscale", 0.707}, {"mscale_all_dim", 1.0},
      {"truncate", false}};
  ExpectRoundTrip(MustParse(yarn));

  Result<BuiltinModelSpec> tiny = ParseBuiltinModel("builtin:tiny?family=qwen3&kv_heads=2");
  ASSERT_TRUE(tiny.ok());
  ExpectRoundTrip(tiny->config);
  tiny = ParseBuiltinModel("builtin:tiny?tie=1");
  ASSERT_TRUE(tiny.ok());
  ExpectRoundTrip(tiny->config);
}

TEST(ModelConfigTest, HfConfigHasFamilyFields) {
  json q2 = ToHfConfig(MustParse(Qwen25_05B()));
  EXPECT_EQ(q2["model_type"], "qwen2");
  EXPECT_EQ(q2["architectures"], json::array({"Qwen2ForCausalLM"}));
  EXPECT_FALSE(q2.contains("attention_bias"));
  EXPECT_FALSE(q2.contains("head_dim"));
  EXPECT_EQ(q2["use_sliding_window"], false);
  EXPECT_TRUE(q2["rope_scaling"].is_null());

  json q3 = ToHfConfig(MustParse(Qwen3_06B()));
  EXPECT_EQ(q3["model_type"], "qwen3");
  EXPECT_EQ(q3["head_dim"], 128);
  EXPECT_EQ(q3["attention_bias"], false);

  json llama = ToHfConfig(MustParse(Llama32_1B()));
  EXPECT_EQ(llama["architectures"], json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(llama["mlp_bias"], false);
  EXPECT_EQ(llama["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(llama["rope_scaling"]["original_max_position_embeddings"], 8192);
  EXPECT_EQ(llama["tie_word_embeddings"], true);
  EXPECT_EQ(llama["torch_dtype"], "bfloat16");
}

struct RefusalCase {
  std::string name;
  std::string patch;  // JSON object merged into the base config (null values erase the key).
  std::string field;
};

TEST(ModelConfigTest, RefusalsNameTheField) {
  const std::vector<RefusalCase> cases = {
      {"model_type", R"({"model_type": "mistral"})", "model_type"},
      {"architecture", R"({"model_type": null, "architectures": ["MistralForCausalLM"]})",
       "architectures"},
      {"not causal lm", R"({"architectures": ["LlamaForSequenceClassification"]})",
       "architectures"},
      {"mismatch", R"({"architectures": ["Qwen2ForCausalLM"]})", "architectures"},
      {"no family", R"({"model_type": null, "architectures": null})", "model_type"},
      {"hidden_act", R"({"hidden_act": "gelu"})", "hidden_act"},
      {"dynamic rope", R"({"rope_scaling": {"type": "dynamic", "factor": 2.0}})",
       "rope_scaling.type"},
      {"longrope", R"({"rope_scaling": {"rope_type": "longrope", "factor": 2.0}})",
       "rope_scaling.rope_type"},
      {"rope key",
       R"({"rope_scaling": {"rope_type": "linear", "factor": 2.0, "low_freq_factor": 1}})",
       "rope_scaling.low_freq_factor"},
      {"llama3 needs original",
       R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1,
                            "high_freq_factor": 4}})",
       "rope_scaling.original_max_position_embeddings"},
      {"llama3 factors",
       R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4,
                            "high_freq_factor": 4, "original_max_position_embeddings": 8192}})",
       "rope_scaling.high_freq_factor"},
      {"no factor", R"({"rope_scaling": {"rope_type": "linear"}})", "rope_scaling.factor"},
      {"zero factor", R"({"rope_scaling": {"rope_type": "linear", "factor": 0}})",
       "rope_scaling.factor"},
      {"yarn betas", R"({"rope_scaling": {"rope_type": "yarn", "factor": 4, "beta_fast": 1,
                                          "beta_slow": 2}})",
       "rope_scaling.beta_slow"},
      {"rope type missing", R"({"rope_scaling": {"factor": 4}})", "rope_scaling.rope_type"},
      {"sliding", R"({"use_sliding_window": true})", "use_sliding_window"},
      {"mlp_bias", R"({"mlp_bias": true})", "mlp_bias"},
      {"mrope", R"({"use_mrope": true})", "use_mrope"},
      {"layer_types", R"({"layer_types": ["full_attention", "sliding_attention"]})", "layer_types"},
      {"partial rotary", R"({"partial_rotary_factor": 0.5})", "partial_rotary_factor"},
      {"quantized", R"({"quantization_config": {"quant_method": "gptq"}})", "quantization_config"},
      {"softcap", R"({"final_logit_softcapping": 30.0})", "final_logit_softcapping"},
      {"moe", R"({"num_experts": 8})", "num_experts"},
      {"dtype", R"({"torch_dtype": "int8"})", "torch_dtype"},
      {"missing hidden", R"({"hidden_size": null})", "hidden_size"},
      {"hidden type", R"({"hidden_size": "2048"})", "hidden_size"},
      {"fractional", R"({"num_hidden_layers": 2.5})", "num_hidden_layers"},
      {"vocab zero", R"({"vocab_size": 0})", "vocab_size"},
      {"negative ff", R"({"intermediate_size": -1})", "intermediate_size"},
      {"heads divide hidden", R"({"head_dim": null, "num_attention_heads": 30})",
       "num_attention_heads"},
      {"kv divide heads", R"({"num_key_value_heads": 5})", "num_key_value_heads"},
      {"odd head_dim", R"({"head_dim": 63})", "head_dim"},
      {"eps", R"({"rms_norm_eps": 0})", "rms_norm_eps"},
      {"theta", R"({"rope_theta": 1})", "rope_theta"},
      {"eos range", R"({"eos_token_id": [128001, 999999]})", "eos_token_id"},
      {"bos range", R"({"bos_token_id": -3})", "bos_token_id"},
      {"tie type", R"({"tie_word_embeddings": "yes"})", "tie_word_embeddings"},
      {"max pos", R"({"max_position_embeddings": 0})", "max_position_embeddings"},
  };
  for (const RefusalCase& rc : cases) {
    SCOPED_TRACE(rc.name);
    json j = Llama32_1B();
    const json patch = json::parse(rc.patch);
    for (const auto& [key, value] : patch.items()) {
      if (value.is_null()) {
        j.erase(key);
      } else {
        j[key] = value;
      }
    }
    Result<ModelConfig> r = ParseHfConfig(j);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), rc.field) << r.status().ToString();
    // The message itself names the field too (its last component).
    const std::string last = rc.field.substr(rc.field.rfind('.') + 1);
    EXPECT_THAT(r.status().message(), HasSubstr(last));
  }
  EXPECT_FALSE(ParseHfConfig(json::array()).ok());
}

TEST(ModelConfigTest, RefusalMessagesNameTheValue) {
  json j = Llama32_1B();
  j["model_type"] = "gemma";
  EXPECT_THAT(ParseHfConfig(j).status().message(), HasSubstr("\"gemma\""));
  j = Llama32_1B();
  j["architectures"] = json::array({"GPT2LMHeadModel"});
  EXPECT_THAT(ParseHfConfig(j).status().message(), HasSubstr("\"GPT2LMHeadModel\""));
  j = Llama32_1B();
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_THAT(ParseHfConfig(j).status().message(), HasSubstr("\"dynamic\""));
}

TEST(ModelConfigTest, ValidateFamilyInvariants) {
  ModelConfig c = MustParse(Qwen25_05B());
  c.attention_bias = false;
  EXPECT_EQ(ValidateModelConfig(c).field(), "attention_bias");
  c = MustParse(Qwen3_06B());
  c.qk_norm = false;
  EXPECT_EQ(ValidateModelConfig(c).field(), "qk_norm");
  c = MustParse(Llama32_1B());
  c.qk_norm = true;
  EXPECT_EQ(ValidateModelConfig(c).field(), "qk_norm");
  c = MustParse(Llama32_1B());
  c.head_dim_explicit = false;
  c.head_dim = 32;
  EXPECT_EQ(ValidateModelConfig(c).field(), "head_dim");
}

TEST(ModelConfigTest, LoadsFromDirectoryAndFile) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("sluice_model_config_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "config.json") << Qwen3_06B().dump(2);
    std::ofstream(dir / "broken.json") << "{\"model_type\": ";
    json bad = Qwen3_06B();
    bad["hidden_act"] = "relu";
    std::ofstream(dir / "bad.json") << bad.dump();
    // Deep enough that printing it in an error, recursively, overflowed the stack (found by
    // tests/fuzz/model_config_fuzz.cpp).
    std::ofstream(dir / "deep.json") << R"({"model_type":"qwen3","vocab_size":)"
                                     << std::string(100000, '[') << std::string(100000, ']') << "}";
  }
  Result<ModelConfig> from_dir = LoadHfConfig(dir.string());
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().ToString();
  EXPECT_EQ(from_dir->architecture, Architecture::kQwen3);
  Result<ModelConfig> from_file = LoadHfConfig((dir / "config.json").string());
  ASSERT_TRUE(from_file.ok());
  EXPECT_TRUE(*from_file == *from_dir);

  Result<ModelConfig> missing = LoadHfConfig((dir / "nope").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  Result<ModelConfig> broken = LoadHfConfig((dir / "broken.json").string());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("broken.json"));
  Result<ModelConfig> bad = LoadHfConfig((dir / "bad.json").string());
  EXPECT_EQ(bad.status().field(), "hidden_act");
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.json"));
  Result<ModelConfig> deep = LoadHfConfig((dir / "deep.json").string());
  EXPECT_EQ(deep.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(), HasSubstr("nests deeper than 1000 levels"));
  fs::remove_all(dir);
}

// A config with head_dim 8 and theta 10000, so plain RoPE gives 1, 0.1, 0.01, 0.001.
ModelConfig SmallRopeConfig() {
  Result<BuiltinModelSpec> spec = ParseBuiltinModel("builtin:tiny?d=16&heads=2&max_pos=8192");
  EXPECT_TRUE(spec.ok());
  return spec->config;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::fabs(want[i]))) << "i=" << i;
  }
}

TEST(RopeTest, DefaultFrequencies) {
  ModelConfig c = SmallRopeConfig();
  ExpectNear(RopeInvFrequenciesF64(c), {1.0, 0.1, 0.01, 0.001});
  std::vector<float> f = RopeInvFrequencies(c);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[1], 0.1f);
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.0);
  c.head_dim = 4;
  c.rope_theta = 100.0;
  ExpectNear(RopeInvFrequenciesF64(c), {1.0, 0.1});
}

TEST(RopeTest, LinearFrequencies) {
  ModelConfig c = SmallRopeConfig();
  c.rope_scaling.type = RopeType::kLinear;
  c.rope_scaling.factor = 4.0;
  ASSERT_TRUE(ValidateModelConfig(c).ok());
  ExpectNear(RopeInvFrequenciesF64(c), {0.25, 0.025, 0.0025, 0.00025});
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.0);
}

TEST(RopeTest, Llama3Frequencies) {
  ModelConfig c = SmallRopeConfig();
  c.rope_scaling.type = RopeType::kLlama3;
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 1000;
  ASSERT_TRUE(ValidateModelConfig(c).ok());
  // Wavelengths 2*pi/f: 6.28, 62.8, 628.3, 6283. Kept below 1000/4 = 250, divided by 8 above
  // 1000/1 = 1000; 628.3 is blended with t = (1000 / 628.3 - 1) / (4 - 1).
  const double t = (1000.0 * 0.01 / (2 * std::numbers::pi) - 1.0) / 3.0;
  EXPECT_NEAR(t, 0.19718, 1e-5);
  const double blended = (1 - t) * 0.01 / 8 + t * 0.01;
  EXPECT_NEAR(blended, 0.0029754, 1e-7);
  ExpectNear(RopeInvFrequenciesF64(c), {1.0, 0.1, blended, 0.001 / 8});
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.0);
}

TEST(RopeTest, YarnFrequenciesAndScale) {
  ModelConfig c = SmallRopeConfig();
  c.rope_scaling.type = RopeType::kYarn;
  c.rope_scaling.factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 2048;
  ASSERT_TRUE(ValidateModelConfig(c).ok());
  // Correction range: 8 * ln(2048 / (2 pi beta)) / (2 ln 10000) = 1.008 (beta 32) and 2.513
  // (beta 1), truncated to [1, 3]; ramp (i - 1) / 2 clamped: 0, 0, 0.5, 1.
  ExpectNear(RopeInvFrequenciesF64(c), {1.0, 0.1, 0.5 * 0.01 + 0.5 * 0.01 / 4, 0.001 / 4});
  EXPECT_NEAR(RopeAttentionScale(c), 0.1 * std::log(4.0) + 1.0, 1e-12);
  EXPECT_NEAR(RopeAttentionScale(c), 1.1386294, 1e-7);

  // Without truncation the ramp uses the raw bounds.
  c.rope_scaling.truncate = false;
  const double low = 8 * std::log(2048 / (2 * std::numbers::pi * 32)) / (2 * std::log(10000.0));
  const double high = 8 * std::log(2048 / (2 * std::numbers::pi)) / (2 * std::log(10000.0));
  EXPECT_NEAR(low, 1.00800, 1e-5);
  EXPECT_NEAR(high, 2.51315, 1e-5);
  const double r1 = 0.0;
  const double r2 = (2 - low) / (high - low);
  ExpectNear(RopeInvFrequenciesF64(c),
             {1.0, 0.1 * (1 - r1) + 0.1 / 4 * r1, 0.01 * (1 - r2) + 0.01 / 4 * r2, 0.001 / 4});

  // Without original_max_position_embeddings the context is max_position_embeddings (8192).
  c.rope_scaling.truncate = true;
  c.rope_scaling.original_max_position_embeddings.reset();
  // 8 * ln(8192 / (2 pi)) / 18.42 = 3.115 -> ceil 4 -> min(4, 7); low = floor(1.61) = 1.
  ExpectNear(RopeInvFrequenciesF64(c), {1.0, 0.1, 0.01 * (1 - 1.0 / 3) + 0.01 / 4 / 3,
                                        0.001 * (1 - 2.0 / 3) + 0.001 / 4 * 2 / 3});

  // Attention factor: explicit wins; else mscale / mscale_all_dim; factor <= 1 gives 1.
  c.rope_scaling.mscale = 1.0;
  c.rope_scaling.mscale_all_dim = 0.5;
  EXPECT_NEAR(RopeAttentionScale(c), (0.1 * std::log(4.0) + 1) / (0.05 * std::log(4.0) + 1), 1e-12);
  c.rope_scaling.attention_factor = 1.5;
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.5);
  c.rope_scaling.attention_factor.reset();
  c.rope_scaling.mscale.reset();
  c.rope_scaling.factor = 1.0;
  EXPECT_DOUBLE_EQ(RopeAttentionScale(c), 1.0);
}

TEST(BuiltinModelTest, Defaults) {
  Result<BuiltinModelSpec> spec = ParseBuiltinModel("builtin:tiny");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const ModelConfig& c = spec->config;
  EXPECT_EQ(spec->name, "tiny");
  EXPECT_EQ(spec->seed, 0u);
  EXPECT_TRUE(spec->char_vocab);
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.intermediate_size, 512);
  EXPECT_EQ(c.vocab_size, kBuiltinCharVocabSize);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.bos_token_id, kBuiltinCharBosId);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(kBuiltinCharEosId));
  EXPECT_EQ(c.pad_token_id, kBuiltinCharPadId);
  EXPECT_TRUE(ValidateModelConfig(c).ok());

  Result<BuiltinModelSpec> same =
      ParseBuiltinModel("builtin:tiny?layers=2&d=128&heads=4&vocab=char");
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->config == c);
}

TEST(BuiltinModelTest, AllParameters) {
  Result<BuiltinModelSpec> spec = ParseBuiltinModel(
      "builtin:tiny?layers=3&d=64&heads=8&kv_heads=2&ff=96&seed=18446744073709551615"
      "&family=qwen3&max_pos=512&vocab=1000&theta=500000&tie=true");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const ModelConfig& c = spec->config;
  EXPECT_EQ(spec->seed, 18446744073709551615ull);
  EXPECT_FALSE(spec->char_vocab);
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.intermediate_size, 96);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_THAT(c.eos_token_ids, IsEmpty());
}

TEST(BuiltinModelTest, ErrorsNameTheParameter) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"builtin:tiny?layers=2&depth=3", "depth"},
      {"builtin:tiny?layers=0", "layers"},
      {"builtin:tiny?layers=two", "layers"},
      {"builtin:tiny?layers=2x", "layers"},
      {"builtin:tiny?layers=", "layers"},
      {"builtin:tiny?layers=2&layers=3", "layers"},
      {"builtin:tiny?d=100&heads=3", "heads"},
      {"builtin:tiny?d=12&heads=4", "heads"},  // head width 3 is odd.
      {"builtin:tiny?heads=4&kv_heads=3", "kv_heads"},
      {"builtin:tiny?d=99999999", "d"},
      {"builtin:tiny?family=gpt2", "family"},
      {"builtin:tiny?vocab=words", "vocab"},
      {"builtin:tiny?seed=-1", "seed"},
      {"builtin:tiny?tie=maybe", "tie"},
      {"builtin:huge?layers=2", "name"},
  };
  for (const auto& [uri, field] : cases) {
    SCOPED_TRACE(uri);
    Result<BuiltinModelSpec> spec = ParseBuiltinModel(uri);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().field(), field) << spec.status().ToString();
    if (field != "name") {
      EXPECT_THAT(spec.status().message(), HasSubstr(field));
    }
  }
  EXPECT_FALSE(ParseBuiltinModel("tiny?layers=2").ok());
  EXPECT_FALSE(ParseBuiltinModel("builtin:tiny?layers").ok());
  EXPECT_FALSE(ParseBuiltinModel("builtin:tiny?&layers=2").ok());
  EXPECT_THAT(ParseBuiltinModel("builtin:huge").status().message(), HasSubstr("\"huge\""));
}

}  // namespace
}  // namespace sluice::model
