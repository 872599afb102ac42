// The learning-rate schedule: linear warm-up, then constant or cosine decay.
//
// Steps count optimizer steps from 0 (the first optimizer step is step 0). With peak lr P,
// W = warmup_steps, N = total_steps, floor m = min_lr_ratio * P:
//   step < W:            lr = P * (step + 1) / W        (the first step already moves; step W-1
//                                                          reaches P)
//   constant, step >= W: lr = P
//   cosine,   step >= W: p = clamp((step - W) / (N - 1 - W), 0, 1)   (p = 1 when N - 1 - W <= 0)
//                        lr = m + (P - m) * (1 + cos(pi * p)) / 2
// so the cosine starts at P on step W and reaches m exactly on the last step N - 1 (and stays
// there for steps past it).
//
// Ownership and thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace sluice::trainer {

enum class LrSchedule { kConstant, kCosine };

// "constant", "cosine"; InvalidArgument otherwise.
Result<LrSchedule> ParseLrSchedule(std::string_view name);
std::string_view LrScheduleName(LrSchedule schedule);

// InvalidArgument naming the field ("optimizer.warmup_steps") for total_steps < 1, a negative or
// non-finite peak_lr, warmup_steps < 0 or min_lr_ratio outside [0, 1].
Status ValidateLrSchedule(int64_t total_steps, double peak_lr, int64_t warmup_steps,
                          double min_lr_ratio);

// The learning rate of optimizer step `step` (negative steps count as 0). Arguments must pass
// ValidateLrSchedule.
double LearningRate(int64_t step, int64_t total_steps, double peak_lr, int64_t warmup_steps,
                    LrSchedule schedule, double min_lr_ratio);

}  // namespace sluice::trainer
