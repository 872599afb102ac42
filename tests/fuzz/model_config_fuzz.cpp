// libFuzzer target for the model config parsers (workers/model/model_config.h): ParseHfConfig, the
// reader of a Hugging Face config.json (parsed as LoadHfConfig parses the file), and, for inputs
// starting with "builtin:", ParseBuiltinModel, the reader of the built-in tiny models' URIs.
//
// Neither may crash or hang; refusals are errors naming the field. For every accepted config:
//   - ValidateModelConfig accepts it, and ignored_fields is sorted;
//   - ToHfConfig, written out as text and parsed again, gives the same config up to model_type and
//     architectures (canonical) and ignored_fields (empty), as model_config.h promises;
//   - the rotary frequencies have head_dim / 2 entries (and, without rope scaling, lie in (0, 1]);
// and for a builtin URI, the sizes stay within the kBuiltinMax* bounds.
//
// Fuzz it with `scripts/fuzz.sh model_config [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/json/json_depth.h"
#include "tests/fuzz/fuzz_require.h"
#include "workers/model/model_config.h"

namespace {

using sluice::model::Architecture;
using sluice::model::ModelConfig;

constexpr size_t kMaxInputBytes = 64 << 10;
// Frequencies of wider heads take longer and prove nothing more.
constexpr int64_t kMaxHeadDimForRope = 4096;

using sluice::fuzz::Require;

void CheckAccepted(const ModelConfig& c) {
  Require(sluice::model::ValidateModelConfig(c).ok(), "an accepted config validates");
  Require(std::is_sorted(c.ignored_fields.begin(), c.ignored_fields.end()),
          "ignored_fields sorted");

  // Round trip through the text of a config.json, as a checkpoint written by us is read back.
  const std::string text = sluice::model::ToHfConfig(c).dump();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  Require(!j.is_discarded(), "ToHfConfig writes valid JSON");
  auto back = sluice::model::ParseHfConfig(j);
  Require(back.ok(), "ToHfConfig's output parses");
  ModelConfig expected = c;
  expected.model_type = std::string(sluice::model::ModelTypeName(c.architecture));
  expected.architectures = {std::string(sluice::model::ArchitectureClassName(c.architecture))};
  expected.ignored_fields.clear();
  Require(*back == expected, "ParseHfConfig(ToHfConfig(c)) == c");

  if (c.head_dim <= kMaxHeadDimForRope) {
    const std::vector<double> inv = sluice::model::RopeInvFrequenciesF64(c);
    Require(inv.size() == static_cast<size_t>(c.head_dim / 2), "head_dim / 2 frequencies");
    if (c.rope_scaling.type == sluice::model::RopeType::kNone) {
      for (double f : inv) Require(f > 0 && f <= 1, "plain RoPE frequencies in (0, 1]");
    }
    (void)sluice::model::RopeAttentionScale(c);
  }
}

void FuzzBuiltin(std::string_view uri) {
  auto spec = sluice::model::ParseBuiltinModel(uri);
  if (!spec.ok()) return;
  const ModelConfig& c = spec->config;
  Require(spec->name == "tiny", "the only builtin model is tiny");
  Require(c.hidden_size <= sluice::model::kBuiltinMaxDim &&
              c.num_attention_heads <= sluice::model::kBuiltinMaxDim &&
              c.num_key_value_heads <= sluice::model::kBuiltinMaxDim &&
              c.num_hidden_layers <= sluice::model::kBuiltinMaxLayers &&
              c.max_position_embeddings <= sluice::model::kBuiltinMaxPositions &&
              c.vocab_size <= sluice::model::kBuiltinMaxVocab,
          "builtin sizes within their bounds");
  if (spec->char_vocab) {
    Require(c.vocab_size == sluice::model::kBuiltinCharVocabSize, "vocab=char size");
  }
  Require(c.architecture == Architecture::kLlama || c.architecture == Architecture::kQwen3,
          "builtin family llama or qwen3");
  Require(c.ignored_fields.empty(), "a builtin config ignores nothing");
  CheckAccepted(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  if (text.starts_with("builtin:")) {
    FuzzBuiltin(text);
    return 0;
  }
  // As LoadHfConfig reads the file: text nesting past kMaxJsonDepth is refused before parsing
  // (this target found ParseHfConfig's errors printing deep values recursively).
  if (sluice::FirstTooDeepJson(text)) return 0;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto config = sluice::model::ParseHfConfig(j);
  if (config.ok()) CheckAccepted(*config);
  return 0;
}
