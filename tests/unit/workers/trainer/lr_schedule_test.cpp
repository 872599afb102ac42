// The learning-rate schedule: warm-up, constant, cosine to the floor at the last step.
#include "workers/trainer/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace sluice::trainer {
namespace lr_schedule_test {

constexpr double kTol = 1e-12;

TEST(LrScheduleTest, LinearWarmupThenConstant) {
  // Warm-up 4: P * (step + 1) / 4, so the first optimizer step already uses P / 4.
  const double want[] = {0.25, 0.5, 0.75, 1.0, 1.0, 1.0};
  for (int step = 0; step < 6; ++step) {
    EXPECT_NEAR(LearningRate(step, 10, 1.0, 4, LrSchedule::kConstant, 0.0), want[step], kTol)
        << step;
  }
  EXPECT_NEAR(LearningRate(1000, 10, 2e-6, 4, LrSchedule::kConstant, 0.0), 2e-6, kTol);
  EXPECT_NEAR(LearningRate(0, 10, 2e-6, 0, LrSchedule::kConstant, 0.0), 2e-6, kTol);
  EXPECT_NEAR(LearningRate(-3, 10, 1.0, 4, LrSchedule::kConstant, 0.0), 0.25, kTol);
}

TEST(LrScheduleTest, CosineFromPeakAfterWarmupToTheFloorAtTheLastStep) {
  // total 13, warm-up 4: decay over steps 4..12 (8 intervals); floor 0.1.
  auto lr = [](int64_t step) { return LearningRate(step, 13, 1.0, 4, LrSchedule::kCosine, 0.1); };
  EXPECT_NEAR(lr(3), 1.0, kTol);  // Last warm-up step.
  EXPECT_NEAR(lr(4), 1.0, kTol);  // p = 0.
  // p = 2/8: 0.1 + 0.9 * (1 + cos(pi / 4)) / 2 = 0.868198...
  EXPECT_NEAR(lr(6), 0.1 + 0.45 * (1 + std::cos(std::numbers::pi / 4)), kTol);
  EXPECT_NEAR(lr(6), 0.8681980515, 1e-9);
  EXPECT_NEAR(lr(8), 0.55, kTol);  // p = 1/2.
  EXPECT_NEAR(lr(12), 0.1, kTol);  // The last step reaches the floor...
  EXPECT_NEAR(lr(50), 0.1, kTol);  // ...and stays there.
  for (int64_t s = 4; s < 12; ++s) EXPECT_GT(lr(s), lr(s + 1)) << s;
}

TEST(LrScheduleTest, CosineWithoutWarmupOrFloor) {
  EXPECT_NEAR(LearningRate(0, 3, 4.0, 0, LrSchedule::kCosine, 0.0), 4.0, kTol);
  EXPECT_NEAR(LearningRate(1, 3, 4.0, 0, LrSchedule::kCosine, 0.0), 2.0, kTol);
  EXPECT_NEAR(LearningRate(2, 3, 4.0, 0, LrSchedule::kCosine, 0.0), 0.0, kTol);
  // A single-step run: its only step is the last one, at the floor.
  EXPECT_NEAR(LearningRate(0, 1, 4.0, 0, LrSchedule::kCosine, 0.5), 2.0, kTol);
}

TEST(LrScheduleTest, ValidationAndNames) {
  EXPECT_TRUE(ValidateLrSchedule(10, 1e-6, 2, 0.1).ok());
  EXPECT_EQ(ValidateLrSchedule(0, 1e-6, 2, 0.1).field(), "optimizer.total_steps");
  EXPECT_EQ(ValidateLrSchedule(10, -1, 2, 0.1).field(), "optimizer.lr");
  EXPECT_EQ(ValidateLrSchedule(10, 1e-6, -1, 0.1).field(), "optimizer.warmup_steps");
  EXPECT_EQ(ValidateLrSchedule(10, 1e-6, 2, 1.5).field(), "optimizer.min_lr_ratio");
  for (LrSchedule s : {LrSchedule::kConstant, LrSchedule::kCosine}) {
    auto parsed = ParseLrSchedule(LrScheduleName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(ParseLrSchedule("linear").status().field(), "optimizer.schedule");
}

}  // namespace lr_schedule_test
}  // namespace sluice::trainer
