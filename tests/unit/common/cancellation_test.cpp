#include "common/process/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

TEST(CancellationTest, StartsUncancelledAndCancelsOnce) {
  CancellationSource source;
  const CancellationToken token = source.Token();
  EXPECT_FALSE(source.IsCancelled());
  EXPECT_FALSE(token.IsCancelled());
  EXPECT_TRUE(token.CanBeCancelled());
  EXPECT_TRUE(source.Cancel());
  EXPECT_FALSE(source.Cancel());
  EXPECT_TRUE(source.IsCancelled());
  EXPECT_TRUE(token.IsCancelled());
  EXPECT_TRUE(source.Token().IsCancelled());
}

TEST(CancellationTest, CopiesShareState) {
  CancellationSource source;
  CancellationSource copy = source;  // NOLINT(performance-unnecessary-copy-initialization)
  const CancellationToken token = source.Token();
  const CancellationToken token_copy = token;
  copy.Cancel();
  EXPECT_TRUE(source.IsCancelled());
  EXPECT_TRUE(token_copy.IsCancelled());
}

TEST(CancellationTest, DefaultTokenIsNeverCancelled) {
  const CancellationToken token;
  EXPECT_FALSE(token.IsCancelled());
  EXPECT_FALSE(token.CanBeCancelled());
  const auto start = SteadyClock::now();
  EXPECT_FALSE(token.WaitFor(milliseconds(20)));
  EXPECT_GE(SteadyClock::now() - start, milliseconds(20));
  bool ran = false;
  CancellationRegistration registration = token.OnCancel([&] { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(CancellationTest, WaitForTimesOutWhenNotCancelled) {
  CancellationSource source;
  const auto start = SteadyClock::now();
  EXPECT_FALSE(source.Token().WaitFor(milliseconds(30)));
  EXPECT_GE(SteadyClock::now() - start, milliseconds(30));
  EXPECT_FALSE(source.Token().WaitFor(milliseconds(0)));
  EXPECT_FALSE(source.Token().WaitFor(-seconds(1)));
}

TEST(CancellationTest, WaitForReturnsEarlyWhenCancelled) {
  CancellationSource source;
  const CancellationToken token = source.Token();
  const auto start = SteadyClock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(20));
    source.Cancel();
  });
  EXPECT_TRUE(token.WaitFor(seconds(30)));
  EXPECT_LT(SteadyClock::now() - start, seconds(10));
  canceller.join();
  // Already cancelled: no wait at all.
  EXPECT_TRUE(token.WaitFor(seconds(30)));
  EXPECT_TRUE(token.WaitFor(milliseconds(0)));
}

TEST(CancellationTest, WaitForHugeTimeoutDoesNotOverflow) {
  CancellationSource source;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(10));
    source.Cancel();
  });
  EXPECT_TRUE(source.Token().WaitFor(std::chrono::nanoseconds::max()));
  canceller.join();
}

TEST(CancellationTest, WaitUntilAndWait) {
  CancellationSource source;
  const CancellationToken token = source.Token();
  EXPECT_FALSE(token.WaitUntil(SteadyClock::now() + milliseconds(5)));
  std::thread waiter([token] { token.Wait(); });
  source.Cancel();
  waiter.join();
  EXPECT_TRUE(token.WaitUntil(SteadyClock::now() - seconds(1)));
}

TEST(CancellationTest, LoopThatSleepsBetweenIterationsStopsPromptly) {
  CancellationSource source;
  std::atomic<int> iterations{0};
  std::thread loop([token = source.Token(), &iterations] {
    while (!token.WaitFor(milliseconds(1))) ++iterations;
  });
  while (iterations.load() < 3) std::this_thread::sleep_for(milliseconds(1));
  source.Cancel();
  loop.join();
  EXPECT_GE(iterations.load(), 3);
}

TEST(CancellationTest, CallbacksRunOnceInOrderOnCancellingThread) {
  CancellationSource source;
  std::vector<int> order;
  std::thread::id ran_on;
  CancellationRegistration a = source.Token().OnCancel([&] { order.push_back(1); });
  CancellationRegistration b = source.Token().OnCancel([&] {
    order.push_back(2);
    ran_on = std::this_thread::get_id();
  });
  EXPECT_TRUE(order.empty());
  std::thread canceller([&] { source.Cancel(); });
  const std::thread::id canceller_id = canceller.get_id();
  canceller.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(ran_on, canceller_id);
  source.Cancel();
  EXPECT_EQ(order.size(), 2u);
}

TEST(CancellationTest, CallbackRunsImmediatelyWhenAlreadyCancelled) {
  CancellationSource source;
  source.Cancel();
  int runs = 0;
  CancellationRegistration registration = source.Token().OnCancel([&] { ++runs; });
  EXPECT_EQ(runs, 1);
  registration.Reset();
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, DestroyedRegistrationDoesNotRun) {
  CancellationSource source;
  int runs = 0;
  {
    CancellationRegistration registration = source.Token().OnCancel([&] { ++runs; });
  }
  CancellationRegistration reset = source.Token().OnCancel([&] { ++runs; });
  reset.Reset();
  source.Cancel();
  EXPECT_EQ(runs, 0);
}

TEST(CancellationTest, RegistrationMovesKeepOneRegistration) {
  CancellationSource source;
  int runs = 0;
  CancellationRegistration first = source.Token().OnCancel([&] { ++runs; });
  CancellationRegistration second = std::move(first);
  CancellationRegistration third;
  third = std::move(second);
  CancellationRegistration other = source.Token().OnCancel([&] { runs += 10; });
  other = std::move(third);  // Unregisters the +10 callback.
  source.Cancel();
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, CallbackMayUnregisterItselfAndOthers) {
  CancellationSource source;
  int later_runs = 0;
  auto self = std::make_unique<CancellationRegistration>();
  auto later = std::make_unique<CancellationRegistration>();
  *self = source.Token().OnCancel([&] {
    self.reset();   // Itself, while running: must not wait for itself.
    later.reset();  // A callback not run yet: it never runs.
  });
  *later = source.Token().OnCancel([&] { ++later_runs; });
  source.Cancel();
  EXPECT_EQ(later_runs, 0);
  EXPECT_EQ(self, nullptr);
}

TEST(CancellationTest, CallbackMayRegisterAnotherWhichRunsAtOnce) {
  CancellationSource source;
  int inner_runs = 0;
  CancellationRegistration inner;
  CancellationRegistration outer =
      source.Token().OnCancel([&] { inner = source.Token().OnCancel([&] { ++inner_runs; }); });
  source.Cancel();
  EXPECT_EQ(inner_runs, 1);
}

TEST(CancellationTest, UnregisterWaitsForCallbackRunningOnAnotherThread) {
  CancellationSource source;
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  CancellationRegistration registration = source.Token().OnCancel([&] {
    started = true;
    std::this_thread::sleep_for(milliseconds(50));
    finished = true;
  });
  std::thread canceller([&] { source.Cancel(); });
  while (!started.load()) std::this_thread::yield();
  registration.Reset();  // Must block until the callback returns.
  EXPECT_TRUE(finished.load());
  canceller.join();
}

TEST(CancellationTest, ChildIsCancelledWithParentNotViceVersa) {
  CancellationSource parent;
  CancellationSource child(parent.Token());
  CancellationSource grandchild(child.Token());
  CancellationSource sibling(parent.Token());
  child.Cancel();
  EXPECT_TRUE(child.IsCancelled());
  EXPECT_TRUE(grandchild.IsCancelled());
  EXPECT_FALSE(parent.IsCancelled());
  EXPECT_FALSE(sibling.IsCancelled());
  int sibling_callbacks = 0;
  CancellationRegistration r = sibling.Token().OnCancel([&] { ++sibling_callbacks; });
  parent.Cancel();
  EXPECT_TRUE(sibling.IsCancelled());
  EXPECT_EQ(sibling_callbacks, 1);
}

TEST(CancellationTest, ChildOfCancelledParentStartsCancelled) {
  CancellationSource parent;
  parent.Cancel();
  CancellationSource child(parent.Token());
  EXPECT_TRUE(child.IsCancelled());
}

TEST(CancellationTest, ChildOfDefaultTokenIsIndependent) {
  CancellationSource child{CancellationToken()};
  EXPECT_FALSE(child.IsCancelled());
  EXPECT_TRUE(child.Cancel());
}

TEST(CancellationTest, DroppedChildrenDoNotAccumulateOrBreakParent) {
  CancellationSource parent;
  for (int i = 0; i < 1000; ++i) {
    CancellationSource child(parent.Token());
    CancellationToken token = child.Token();
    if (i % 2 == 0) child.Cancel();
  }
  // A token kept after its source is gone still follows the parent.
  CancellationToken kept;
  {
    CancellationSource child(parent.Token());
    kept = child.Token();
  }
  EXPECT_FALSE(kept.IsCancelled());
  parent.Cancel();
  EXPECT_TRUE(kept.IsCancelled());
}

TEST(CancellationTest, ConcurrentCancelRegisterAndWait) {
  for (int round = 0; round < 50; ++round) {
    CancellationSource source;
    std::atomic<int> callback_runs{0};
    std::atomic<int> cancel_wins{0};
    std::vector<std::thread> threads;
    std::vector<CancellationRegistration> registrations(8);
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back(
          [&, i] { registrations[i] = source.Token().OnCancel([&] { ++callback_runs; }); });
    }
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&] { EXPECT_TRUE(source.Token().WaitFor(seconds(30))); });
    }
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&] {
        CancellationSource child(source.Token());
        child.Token().Wait();
      });
    }
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&] {
        if (source.Cancel()) ++cancel_wins;
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(cancel_wins.load(), 1);
    EXPECT_EQ(callback_runs.load(), 8);  // Each exactly once, before or after Cancel.
  }
}

TEST(CancellationTest, ConcurrentUnregisterDuringCancel) {
  for (int round = 0; round < 100; ++round) {
    CancellationSource source;
    auto counter = std::make_shared<std::atomic<int>>(0);
    std::vector<CancellationRegistration> registrations;
    for (int i = 0; i < 16; ++i) {
      registrations.push_back(source.Token().OnCancel([counter] { ++*counter; }));
    }
    std::thread canceller([&] { source.Cancel(); });
    std::thread unregisterer([&] {
      for (auto& r : registrations) r.Reset();
    });
    canceller.join();
    unregisterer.join();
    EXPECT_LE(counter->load(), 16);
  }
}

}  // namespace
}  // namespace sluice
