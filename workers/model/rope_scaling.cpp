#include "workers/model/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

#include "workers/model/model_config.h"

namespace sluice::model {
namespace {

double YarnMscale(double scale, double k) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * k * std::log(scale) + 1.0;
}

}  // namespace

std::string_view RopeTypeName(RopeType type) {
  switch (type) {
    case RopeType::kNone:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kLlama3:
      return "llama3";
    case RopeType::kYarn:
      return "yarn";
  }
  return "unknown";
}

std::vector<double> RopeInvFrequenciesF64(const ModelConfig& c) {
  const int64_t dim = c.head_dim;
  const int64_t half = dim / 2;
  const double base = c.rope_theta;
  std::vector<double> inv(static_cast<size_t>(std::max<int64_t>(half, 0)));
  for (int64_t i = 0; i < half; ++i) {
    inv[i] = std::pow(base, -static_cast<double>(2 * i) / static_cast<double>(dim));
  }
  const RopeScaling& s = c.rope_scaling;
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  switch (s.type) {
    case RopeType::kNone:
      break;
    case RopeType::kLinear:
      for (double& f : inv) f /= s.factor;
      break;
    case RopeType::kLlama3: {
      const double old_context = static_cast<double>(
          s.original_max_position_embeddings.value_or(c.max_position_embeddings));
      // Wavelengths (in positions) beyond which a channel is fully scaled / left alone.
      const double scaled_above = old_context / s.low_freq_factor;
      const double kept_below = old_context / s.high_freq_factor;
      for (double& f : inv) {
        const double wavelength = kTwoPi / f;
        if (wavelength < kept_below) continue;
        if (wavelength > scaled_above) {
          f /= s.factor;
          continue;
        }
        const double t = (old_context / wavelength - s.low_freq_factor) /
                         (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - t) * (f / s.factor) + t * f;
      }
      break;
    }
    case RopeType::kYarn: {
      const double context = static_cast<double>(
          s.original_max_position_embeddings.value_or(c.max_position_embeddings));
      // The channel index (in [0, dim)) at which a frequency completes `rotations` turns over
      // the pretraining context.
      auto channel_for = [&](double rotations) {
        return static_cast<double>(dim) * std::log(context / (rotations * kTwoPi)) /
               (2.0 * std::log(base));
      };
      double low = channel_for(s.beta_fast);
      double high = channel_for(s.beta_slow);
      if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        // ramp 0: fast channels keep their frequency; ramp 1: slow channels are interpolated.
        inv[i] = (1.0 - ramp) * inv[i] + ramp * (inv[i] / s.factor);
      }
      break;
    }
  }
  return inv;
}

std::vector<float> RopeInvFrequencies(const ModelConfig& config) {
  std::vector<double> f64 = RopeInvFrequenciesF64(config);
  return std::vector<float>(f64.begin(), f64.end());
}

double RopeAttentionScale(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  if (s.type != RopeType::kYarn) return 1.0;
  if (s.attention_factor) return *s.attention_factor;
  if (s.mscale && s.mscale_all_dim && *s.mscale != 0 && *s.mscale_all_dim != 0) {
    return YarnMscale(s.factor, *s.mscale) / YarnMscale(s.factor, *s.mscale_all_dim);
  }
  return YarnMscale(s.factor, 1.0);
}

}  // namespace sluice::model
