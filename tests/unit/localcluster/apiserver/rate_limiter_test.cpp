// Tests of ClientRateLimiter on a FakeClock.
#include "localcluster/apiserver/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace sluice::apiserver {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ClientRateLimiter, AllowsABurstThenRefillsAtQps) {
  FakeClock clock;
  ClientRateLimiter limiter({.qps = 2, .burst = 3, .max_clients = 10}, &clock);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Allow("a", nullptr)) << i;
  seconds retry{0};
  EXPECT_FALSE(limiter.Allow("a", &retry));
  EXPECT_EQ(retry, seconds(1)) << "half a second rounds up to whole seconds";

  clock.Advance(milliseconds(499));
  EXPECT_FALSE(limiter.Allow("a", &retry));
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(limiter.Allow("a", nullptr)) << "one token after 1/qps";
  EXPECT_FALSE(limiter.Allow("a", nullptr));

  // A long rest refills only up to the burst.
  clock.Advance(seconds(3600));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Allow("a", nullptr)) << i;
  EXPECT_FALSE(limiter.Allow("a", nullptr));
}

TEST(ClientRateLimiter, RetryAfterCountsWholeSecondsUntilTheNextToken) {
  FakeClock clock;
  ClientRateLimiter limiter({.qps = 0.25, .burst = 1, .max_clients = 10}, &clock);
  EXPECT_TRUE(limiter.Allow("slow", nullptr));
  seconds retry{0};
  EXPECT_FALSE(limiter.Allow("slow", &retry));
  EXPECT_EQ(retry, seconds(4));
  clock.Advance(milliseconds(2500));
  EXPECT_FALSE(limiter.Allow("slow", &retry));
  EXPECT_EQ(retry, seconds(2)) << "1.5s left, rounded up";
  clock.Advance(milliseconds(1500));
  EXPECT_TRUE(limiter.Allow("slow", &retry));
}

TEST(ClientRateLimiter, ClientsHaveTheirOwnBuckets) {
  FakeClock clock;
  ClientRateLimiter limiter({.qps = 1, .burst = 2, .max_clients = 10}, &clock);
  EXPECT_TRUE(limiter.Allow("token-a", nullptr));
  EXPECT_TRUE(limiter.Allow("token-a", nullptr));
  EXPECT_FALSE(limiter.Allow("token-a", nullptr));
  EXPECT_TRUE(limiter.Allow("token-b", nullptr));
  EXPECT_TRUE(limiter.Allow("10.0.0.7", nullptr));
  EXPECT_EQ(limiter.tracked_clients(), 3u);
}

TEST(ClientRateLimiter, ForgetsTheLeastRecentlySeenClientBeyondMaxClients) {
  FakeClock clock;
  ClientRateLimiter limiter({.qps = 1, .burst = 1, .max_clients = 2}, &clock);
  EXPECT_TRUE(limiter.Allow("a", nullptr));
  EXPECT_TRUE(limiter.Allow("b", nullptr));
  EXPECT_FALSE(limiter.Allow("a", nullptr));  // "a" is now the most recently seen.
  EXPECT_TRUE(limiter.Allow("c", nullptr));   // Evicts "b".
  EXPECT_EQ(limiter.tracked_clients(), 2u);
  EXPECT_FALSE(limiter.Allow("a", nullptr)) << "a's empty bucket was kept";
  EXPECT_FALSE(limiter.Allow("c", nullptr));
  EXPECT_TRUE(limiter.Allow("b", nullptr)) << "b was forgotten and starts full";
  EXPECT_EQ(limiter.tracked_clients(), 2u);

  for (int i = 0; i < 1000; ++i) (void)limiter.Allow("client-" + std::to_string(i), nullptr);
  EXPECT_EQ(limiter.tracked_clients(), 2u);
}

TEST(ClientRateLimiter, DegenerateOptions) {
  FakeClock clock;
  ClientRateLimiter unlimited({.qps = 0, .burst = 0, .max_clients = 0}, &clock);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(unlimited.Allow("a", nullptr));
  EXPECT_EQ(unlimited.tracked_clients(), 0u);

  ClientRateLimiter tiny({.qps = 1, .burst = 0.1, .max_clients = 0}, &clock);
  EXPECT_TRUE(tiny.Allow("a", nullptr)) << "burst below 1 counts as 1";
  EXPECT_FALSE(tiny.Allow("a", nullptr));
  EXPECT_TRUE(tiny.Allow("b", nullptr));
  EXPECT_EQ(tiny.tracked_clients(), 1u) << "max_clients 0 counts as 1";

  ClientRateLimiter glacial({.qps = 1e-12, .burst = 1, .max_clients = 1}, &clock);
  EXPECT_TRUE(glacial.Allow("a", nullptr));
  seconds retry{0};
  EXPECT_FALSE(glacial.Allow("a", &retry));
  EXPECT_EQ(retry, seconds(86400)) << "capped";
}

TEST(ClientRateLimiter, ConcurrentCallersNeverExceedTheBurst) {
  FakeClock clock;  // Never advanced: exactly `burst` requests of one client may pass.
  ClientRateLimiter limiter({.qps = 5, .burst = 100, .max_clients = 1000}, &clock);
  // A second limiter whose small table is churned by many clients at the same time.
  ClientRateLimiter small({.qps = 5, .burst = 1, .max_clients = 4}, &clock);
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        if (limiter.Allow("shared", nullptr)) ++allowed;
        (void)limiter.Allow("other-" + std::to_string(t), nullptr);
        (void)small.Allow("churn-" + std::to_string(t) + "-" + std::to_string(i % 7), nullptr);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 100);
  EXPECT_EQ(limiter.tracked_clients(), 9u);
  EXPECT_EQ(small.tracked_clients(), 4u);
}

}  // namespace
}  // namespace sluice::apiserver
