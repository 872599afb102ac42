#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace sluice {
namespace {

TEST(FakeClockTest, MovesOnlyWhenAdvanced) {
  FakeClock clock;
  const auto t0 = clock.Now();
  const auto w0 = clock.WallNow();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(std::chrono::seconds(5));
  EXPECT_EQ(clock.Now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(clock.WallNow() - w0, std::chrono::seconds(5));
}

TEST(FakeClockTest, SleepForReturnsWhenAdvancedPastDeadline) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(std::chrono::seconds(10));
    woke = true;
  });
  while (clock.Sleepers() == 0) std::this_thread::yield();
  clock.Advance(std::chrono::seconds(4));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke.load());
  clock.Advance(std::chrono::seconds(6));
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.Sleepers(), 0);
}

TEST(FakeClockTest, PendingSleepersLeaveOutThoseAlreadyDue) {
  FakeClock clock;
  std::mutex mu;
  std::unique_lock<std::mutex> hold(mu);  // Keeps the woken sleeper from finishing.
  std::thread sleeper([&] {
    clock.SleepFor(std::chrono::seconds(3));
    std::lock_guard<std::mutex> wait(mu);
  });
  while (clock.Sleepers() == 0) std::this_thread::yield();
  EXPECT_EQ(clock.PendingSleepers(), 1);
  clock.Advance(std::chrono::seconds(3));
  // Due: no longer pending, whether or not its thread has run yet.
  EXPECT_EQ(clock.PendingSleepers(), 0);
  hold.unlock();
  sleeper.join();
  EXPECT_EQ(clock.Sleepers(), 0);
}

TEST(SystemClockTest, MonotonicDoesNotGoBack) {
  SystemClock& clock = SystemClock::Instance();
  const auto a = clock.Now();
  const auto b = clock.Now();
  EXPECT_LE(a, b);
}

TEST(ClockOrSystemTest, AGivenClockIsUsedAndNullMeansTheSystemClock) {
  FakeClock fake;
  Clock* given = &fake;
  const Clock* given_const = &fake;
  EXPECT_EQ(&ClockOrSystem(given), &fake);
  EXPECT_EQ(&ClockOrSystem(given_const), &fake);
  EXPECT_EQ(&ClockOrSystem(static_cast<Clock*>(nullptr)), &SystemClock::Instance());
  EXPECT_EQ(&ClockOrSystem(static_cast<const Clock*>(nullptr)), &SystemClock::Instance());
}

}  // namespace
}  // namespace sluice
