// Tests of the CrashLoopBackOff rules.
#include "localcluster/node/restart_backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::node {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

TEST(RestartBackoffTest, FirstRestartIsImmediateThenDelayDoublesFromTenSecondsToTheCap) {
  std::vector<int64_t> delays;
  for (int i = 0; i < 9; ++i) {
    delays.push_back(std::chrono::duration_cast<seconds>(RestartDelay(i)).count());
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{0, 10, 20, 40, 80, 160, 300, 300, 300}));
  EXPECT_EQ(RestartDelay(-1), seconds(0));
  EXPECT_EQ(RestartDelay(1000), seconds(300));
}

TEST(RestartBackoffTest, BaseAndCapAreParameters) {
  using std::chrono::milliseconds;
  EXPECT_EQ(RestartDelay(1, milliseconds(1000), milliseconds(5000)), milliseconds(1000));
  EXPECT_EQ(RestartDelay(3, milliseconds(1000), milliseconds(5000)), milliseconds(4000));
  EXPECT_EQ(RestartDelay(4, milliseconds(1000), milliseconds(5000)), milliseconds(5000));
  EXPECT_EQ(RestartDelay(30, milliseconds(1000), milliseconds(5000)), milliseconds(5000));
}

TEST(RestartBackoffTest, ShouldRestartFollowsThePolicy) {
  EXPECT_TRUE(ShouldRestart("Always", 0));
  EXPECT_TRUE(ShouldRestart("Always", 1));
  EXPECT_TRUE(ShouldRestart("", 0));
  EXPECT_FALSE(ShouldRestart("OnFailure", 0));
  EXPECT_TRUE(ShouldRestart("OnFailure", 137));
  EXPECT_FALSE(ShouldRestart("Never", 0));
  EXPECT_FALSE(ShouldRestart("Never", 1));
}

TEST(RestartBackoffTest, ExponentGrowsAndResetsAfterALongRun) {
  int e = -1;
  std::vector<int64_t> delays;
  for (int i = 0; i < 7; ++i) {
    e = BackoffExponentAfterRun(e, seconds(1));
    delays.push_back(std::chrono::duration_cast<seconds>(RestartDelay(e)).count());
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{0, 10, 20, 40, 80, 160, 300}));
  EXPECT_EQ(BackoffExponentAfterRun(e, minutes(10)), 0);
  EXPECT_EQ(BackoffExponentAfterRun(3, minutes(9)), 4);
  EXPECT_EQ(BackoffExponentAfterRun(-1, minutes(20)), 0);
}

}  // namespace
}  // namespace sluice::node
