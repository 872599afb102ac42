#include "workers/trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace sluice::trainer {

Result<LrSchedule> ParseLrSchedule(std::string_view name) {
  for (LrSchedule s : {LrSchedule::kConstant, LrSchedule::kCosine}) {
    if (name == LrScheduleName(s)) return s;
  }
  return Status::InvalidArgument(
      "unknown schedule \"" + std::string(name) + "\" (constant, cosine)", "optimizer.schedule");
}

std::string_view LrScheduleName(LrSchedule schedule) {
  switch (schedule) {
    case LrSchedule::kConstant:
      return "constant";
    case LrSchedule::kCosine:
      return "cosine";
  }
  return "?";
}

Status ValidateLrSchedule(int64_t total_steps, double peak_lr, int64_t warmup_steps,
                          double min_lr_ratio) {
  if (total_steps < 1) {
    return Status::InvalidArgument("must be >= 1, got " + std::to_string(total_steps),
                                   "optimizer.total_steps");
  }
  if (!(peak_lr >= 0) || !std::isfinite(peak_lr)) {
    return Status::InvalidArgument("must be finite and >= 0", "optimizer.lr");
  }
  if (warmup_steps < 0) {
    return Status::InvalidArgument("must not be negative", "optimizer.warmup_steps");
  }
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) {
    return Status::InvalidArgument("must be in [0, 1]", "optimizer.min_lr_ratio");
  }
  return Status::Ok();
}

double LearningRate(int64_t step, int64_t total_steps, double peak_lr, int64_t warmup_steps,
                    LrSchedule schedule, double min_lr_ratio) {
  step = std::max<int64_t>(step, 0);
  if (step < warmup_steps) {
    return peak_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  if (schedule == LrSchedule::kConstant) return peak_lr;
  const double floor_lr = min_lr_ratio * peak_lr;
  const int64_t decay_steps = total_steps - 1 - warmup_steps;
  const double progress =
      decay_steps <= 0
          ? 1.0
          : std::min(static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps),
                     1.0);
  return floor_lr + (peak_lr - floor_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace sluice::trainer
