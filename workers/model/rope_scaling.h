// Rotary position embeddings: the rope_scaling parameters of a Hugging Face config.json
// (RopeType, RopeScaling) and the rotary frequency math that follows from them. No libtorch:
// the torch model turns these frequencies into its cos/sin tables.
//
// Rotary conventions (RopeInvFrequencies): the head's first rotary_dim / 2 channels pair with the
// second half; channel pair i rotates by position * inv_freq[i]; cos and sin are multiplied by
// RopeAttentionScale (1 except for yarn). Values are computed in double and rounded to float.
// Frequencies are in radians per position; wavelengths and contexts are in positions.
//
// The frequency functions take a ModelConfig (model_config.h, which includes this header): they
// read its head_dim, rope_theta, max_position_embeddings and rope_scaling. Parsing and validating
// rope_scaling is ParseHfConfig's and ValidateModelConfig's work (model_config.h).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::model {

struct ModelConfig;

enum class RopeType : uint8_t {
  kNone,    // Plain RoPE ("default" in HF, or rope_scaling null).
  kLinear,  // Position interpolation: every frequency divided by factor.
  kLlama3,  // Llama 3.1's piecewise scaling by wavelength.
  kYarn,    // YaRN: per-channel blend of interpolation and extrapolation plus a cos/sin scale.
};

// "default", "linear", "llama3", "yarn".
std::string_view RopeTypeName(RopeType type);

struct RopeScaling {
  RopeType type = RopeType::kNone;
  // linear, llama3, yarn: the context extension factor (> 0).
  double factor = 1.0;
  // llama3: wavelengths longer than original_max_position_embeddings / low_freq_factor are
  // divided by factor; shorter than original_max_position_embeddings / high_freq_factor kept;
  // smooth blend between. high_freq_factor > low_freq_factor > 0.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3: required. yarn: the pretraining context; absent (nullopt) means
  // max_position_embeddings. linear: carried for round trips only.
  std::optional<int64_t> original_max_position_embeddings;
  // yarn: the rotation counts that bound the ramp between extrapolated (fast) and interpolated
  // (slow) channels (HF defaults 32 and 1).
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  // yarn: the cos/sin scale. When attention_factor is set it is used as is; otherwise, when
  // both mscale and mscale_all_dim are set and non-zero, it is
  // m(factor, mscale) / m(factor, mscale_all_dim), else m(factor, 1), where
  // m(s, k) = 1 for s <= 1 and 0.1 * k * ln(s) + 1 otherwise.
  std::optional<double> attention_factor;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  // yarn: floor/ceil the correction range to whole channels (HF default true).
  bool truncate = true;

  friend bool operator==(const RopeScaling&, const RopeScaling&) = default;
};

// Rotary inverse frequencies, head_dim / 2 of them, for the config's rope_theta and
// rope_scaling: default theta^(-2i/d); linear divides by factor; llama3 and yarn as described
// on RopeScaling. The config should be valid (ValidateModelConfig).
std::vector<double> RopeInvFrequenciesF64(const ModelConfig& config);
std::vector<float> RopeInvFrequencies(const ModelConfig& config);
// The factor applied to cos and sin (yarn's attention factor; 1 for the other types).
double RopeAttentionScale(const ModelConfig& config);

}  // namespace sluice::model
