#include "common/token_bucket_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace sluice {
namespace {

using std::chrono::milliseconds;

constexpr Clock::MonoTime kStart{std::chrono::seconds(1000)};

TEST(TokenBucketStateTest, StartsFullAndRefillsAtQpsUpToBurst) {
  // Each step: advance the time, then take (TryTake) or reserve (Reserve); expect the outcome.
  struct Step {
    int64_t at_ms;    // Since kStart.
    char op;          // 't': TryTake, 'r': Reserve.
    bool took;        // For 't'.
    int64_t wait_ms;  // For 'r'.
    double tokens_after;
  };
  const double qps = 2, burst = 3;
  const std::vector<Step> steps = {
      {0, 't', true, 0, 2},        {0, 't', true, 0, 1},       {0, 't', true, 0, 0},
      {0, 't', false, 0, 0},       {250, 't', false, 0, 0.5},   // Half a token earned.
      {500, 't', true, 0, 0},      {500, 'r', false, 500, -1},  // A reservation: 0.5 s to wait.
      {500, 'r', false, 1000, -2}, {10000, 't', true, 0, 2},    // Refilled only up to burst.
      {9000, 't', true, 0, 1},  // Time that goes backwards earns nothing.
  };
  TokenBucketState bucket(qps, burst, kStart);
  EXPECT_EQ(bucket.tokens(), burst);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    bucket.Refill(kStart + milliseconds(s.at_ms));
    if (s.op == 't') {
      EXPECT_EQ(bucket.TryTake(), s.took);
    } else {
      EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.Reserve()).count(), s.wait_ms);
    }
    EXPECT_DOUBLE_EQ(bucket.tokens(), s.tokens_after);
  }
}

TEST(TokenBucketStateTest, TimeUntilTokenCountsTheMissingPart) {
  TokenBucketState bucket(4, 1, kStart);
  EXPECT_EQ(bucket.TimeUntilToken(), Clock::Duration::zero());
  ASSERT_TRUE(bucket.TryTake());
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.TimeUntilToken()).count(), 250);
  bucket.Refill(kStart + milliseconds(100));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.TimeUntilToken()).count(), 150);
}

TEST(TokenBucketStateTest, ATinyRateWaitsAtMostAYear) {
  TokenBucketState bucket(1e-300, 1, kStart);
  ASSERT_TRUE(bucket.TryTake());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::hours>(bucket.TimeUntilToken()).count(),
            365 * 24);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::hours>(bucket.Reserve()).count(), 365 * 24);
}

}  // namespace
}  // namespace sluice
