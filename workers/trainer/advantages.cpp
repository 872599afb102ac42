#include "workers/trainer/advantages.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

namespace sluice::trainer {
namespace {

Status CheckMask(std::span<const float> mask, size_t expected, const char* field) {
  if (mask.size() != expected) {
    return Status::InvalidArgument(
        "has " + std::to_string(mask.size()) + " entries, expected " + std::to_string(expected),
        field);
  }
  for (size_t t = 0; t < mask.size(); ++t) {
    if (mask[t] != 0.0f && mask[t] != 1.0f) {
      return Status::InvalidArgument(
          "entry " + std::to_string(t) + " is " + std::to_string(mask[t]) + ", must be 0 or 1",
          field);
    }
  }
  return Status::Ok();
}

// Mean and unbiased std of the values selected by `members` (indices into `values`).
struct Spread {
  double mean = 0.0;
  double stddev = 0.0;
  bool constant = true;  // All members equal (exactly): no signal, advantage 0.
};

Spread SpreadOf(std::span<const double> values, const std::vector<size_t>& members) {
  Spread s;
  if (members.empty()) return s;
  double sum = 0.0;
  for (size_t i : members) {
    sum += values[i];
    s.constant = s.constant && values[i] == values[members.front()];
  }
  s.mean = sum / static_cast<double>(members.size());
  if (members.size() > 1) {
    // Two passes (mean, then squared deviations) so near-equal rewards do not cancel badly.
    double ss = 0.0;
    for (size_t i : members) ss += (values[i] - s.mean) * (values[i] - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(members.size() - 1));
  }
  return s;
}

}  // namespace

Status Validate(const RewardShapingOptions& options) {
  if (options.overlong_buffer_tokens < 0) {
    return Status::InvalidArgument("must not be negative", "reward.overlong_buffer_tokens");
  }
  if (options.overlong_buffer_tokens > 0) {
    if (options.max_new_tokens <= 0) {
      return Status::InvalidArgument("must be positive when the overlong penalty is on",
                                     "reward.max_new_tokens");
    }
    if (options.overlong_buffer_tokens > options.max_new_tokens) {
      return Status::InvalidArgument("must not exceed max_new_tokens",
                                     "reward.overlong_buffer_tokens");
    }
  }
  if (!(options.overlong_penalty_factor >= 0) || !std::isfinite(options.overlong_penalty_factor)) {
    return Status::InvalidArgument("must be finite and >= 0", "reward.overlong_penalty_factor");
  }
  if (!std::isfinite(options.reward_bias)) {
    return Status::InvalidArgument("must be finite", "reward.reward_bias");
  }
  if (!std::isfinite(options.reward_scaling)) {
    return Status::InvalidArgument("must be finite", "reward.reward_scaling");
  }
  if (!(options.reward_clip >= 0) || !std::isfinite(options.reward_clip)) {
    return Status::InvalidArgument("must be finite and >= 0", "reward.reward_clip");
  }
  return Status::Ok();
}

double OverlongPenalty(int64_t generated_tokens, const RewardShapingOptions& options) {
  if (options.overlong_buffer_tokens <= 0) return 0.0;
  const double lov = static_cast<double>(options.overlong_buffer_tokens);
  const double excess =
      static_cast<double>(generated_tokens) - static_cast<double>(options.max_new_tokens) + lov;
  return std::min(-excess / lov * options.overlong_penalty_factor, 0.0);
}

double ShapeReward(double reward, int64_t generated_tokens, const RewardShapingOptions& options) {
  double r = reward + OverlongPenalty(generated_tokens, options);
  r = (r + options.reward_bias) * options.reward_scaling;
  if (options.reward_clip > 0) r = std::clamp(r, -options.reward_clip, options.reward_clip);
  return r;
}

Result<AdvantageMode> ParseAdvantageMode(std::string_view name) {
  for (AdvantageMode m : {AdvantageMode::kGroup, AdvantageMode::kMeanOnly,
                          AdvantageMode::kLeaveOneOut, AdvantageMode::kBatch}) {
    if (name == AdvantageModeName(m)) return m;
  }
  return Status::InvalidArgument("unknown advantage mode \"" + std::string(name) +
                                     "\" (group, mean-only, leave-one-out, batch)",
                                 "advantage.mode");
}

std::string_view AdvantageModeName(AdvantageMode mode) {
  switch (mode) {
    case AdvantageMode::kGroup:
      return "group";
    case AdvantageMode::kMeanOnly:
      return "mean-only";
    case AdvantageMode::kLeaveOneOut:
      return "leave-one-out";
    case AdvantageMode::kBatch:
      return "batch";
  }
  return "?";
}

Result<std::vector<double>> GroupAdvantages(std::span<const double> rewards,
                                            std::span<const int64_t> group_index,
                                            const GroupAdvantageOptions& options) {
  if (group_index.size() != rewards.size()) {
    return Status::InvalidArgument("has " + std::to_string(group_index.size()) +
                                       " entries, rewards has " + std::to_string(rewards.size()),
                                   "group_index");
  }
  if (!(options.eps > 0) || !std::isfinite(options.eps)) {
    return Status::InvalidArgument("must be finite and > 0", "advantage.eps");
  }
  for (size_t i = 0; i < rewards.size(); ++i) {
    if (!std::isfinite(rewards[i])) {
      return Status::InvalidArgument("reward " + std::to_string(i) + " is not finite", "rewards");
    }
  }
  std::vector<double> adv(rewards.size(), 0.0);
  if (options.mode == AdvantageMode::kBatch) {
    std::vector<size_t> all(rewards.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    const Spread s = SpreadOf(rewards, all);
    if (!s.constant) {
      for (size_t i : all) adv[i] = (rewards[i] - s.mean) / (s.stddev + options.eps);
    }
    return adv;
  }
  // Members of each group in first-appearance order (the order does not affect the result).
  std::unordered_map<int64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < group_index.size(); ++i) groups[group_index[i]].push_back(i);
  for (const auto& [label, members] : groups) {
    const Spread s = SpreadOf(rewards, members);
    if (s.constant) continue;  // Covers singletons too.
    const double n = static_cast<double>(members.size());
    for (size_t i : members) {
      switch (options.mode) {
        case AdvantageMode::kGroup:
          adv[i] = (rewards[i] - s.mean) / (s.stddev + options.eps);
          break;
        case AdvantageMode::kMeanOnly:
          adv[i] = rewards[i] - s.mean;
          break;
        case AdvantageMode::kLeaveOneOut:
          adv[i] = rewards[i] - (s.mean * n - rewards[i]) / (n - 1);
          break;
        case AdvantageMode::kBatch:
          break;  // Handled above.
      }
    }
  }
  return adv;
}

Result<std::vector<double>> TokenRewards(double sequence_reward, std::span<const float> mask,
                                         std::span<const double> kl, double kl_coef) {
  SLUICE_RETURN_IF_ERROR(CheckMask(mask, mask.size(), "mask"));
  if (!kl.empty() && kl.size() != mask.size()) {
    return Status::InvalidArgument(
        "has " + std::to_string(kl.size()) + " entries, mask has " + std::to_string(mask.size()),
        "kl");
  }
  std::vector<double> r(mask.size(), 0.0);
  for (size_t t = 0; t < mask.size(); ++t) {
    if (mask[t] != 0.0f && !kl.empty()) r[t] = -kl_coef * kl[t];
  }
  for (size_t t = mask.size(); t-- > 0;) {
    if (mask[t] != 0.0f) {
      r[t] += sequence_reward;
      break;
    }
  }
  return r;
}

Result<GaeResult> Gae(std::span<const double> rewards, std::span<const double> values,
                      std::span<const float> mask, const GaeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckMask(mask, rewards.size(), "mask"));
  if (!values.empty() && values.size() != rewards.size()) {
    return Status::InvalidArgument("has " + std::to_string(values.size()) +
                                       " entries, rewards has " + std::to_string(rewards.size()),
                                   "values");
  }
  if (!(options.gamma >= 0 && options.gamma <= 1)) {
    return Status::InvalidArgument("must be in [0, 1]", "gae.gamma");
  }
  if (!(options.lambda >= 0 && options.lambda <= 1)) {
    return Status::InvalidArgument("must be in [0, 1]", "gae.lambda");
  }
  const size_t n = rewards.size();
  GaeResult out{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  double next_value = 0.0;
  double next_adv = 0.0;
  for (size_t t = n; t-- > 0;) {
    const double v = values.empty() ? 0.0 : values[t];
    if (mask[t] != 0.0f) {
      const double delta = rewards[t] + options.gamma * next_value - v;
      next_adv = delta + options.gamma * options.lambda * next_adv;
      next_value = v;
      out.advantages[t] = next_adv;
    }
    out.returns[t] = out.advantages[t] + v;
  }
  return out;
}

double MomentSums::UnbiasedStd() const {
  if (count <= 1) return 0.0;
  // Rounding can push the difference slightly below 0 when all values are equal.
  return std::sqrt(std::max(sum_sq - sum * Mean(), 0.0) / (count - 1));
}

Result<MomentSums> MaskedMoments(std::span<const double> values, std::span<const float> mask) {
  SLUICE_RETURN_IF_ERROR(CheckMask(mask, values.size(), "mask"));
  MomentSums m;
  for (size_t t = 0; t < values.size(); ++t) {
    if (mask[t] == 0.0f) continue;
    m.sum += values[t];
    m.sum_sq += values[t] * values[t];
    m.count += 1;
  }
  return m;
}

Status NormalizeAdvantages(std::span<double> advantages, std::span<const float> mask,
                           const MomentSums& global, double eps) {
  SLUICE_RETURN_IF_ERROR(CheckMask(mask, advantages.size(), "mask"));
  if (!(eps > 0) || !std::isfinite(eps)) {
    return Status::InvalidArgument("must be finite and > 0", "eps");
  }
  const double mean = global.Mean();
  const double stddev = global.UnbiasedStd();
  for (size_t t = 0; t < advantages.size(); ++t) {
    advantages[t] = mask[t] != 0.0f ? (advantages[t] - mean) / (stddev + eps) : 0.0;
  }
  return Status::Ok();
}

}  // namespace sluice::trainer
