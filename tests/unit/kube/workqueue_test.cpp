// The workqueue layers: dedup and one-worker-per-key, AddAfter on a FakeClock, the rate
// limiters, metrics (including the scrape-time in-progress gauges), and shutdown with drain.
#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/metrics/exposition.h"
#include "kube/delaying_queue.h"
#include "kube/rate_limiter.h"
#include "kube/rate_limiting_queue.h"
#include "tests/unit/common/promtool_check.h"
#include "tests/unit/common/scraped_metric.h"

namespace sluice::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WorkqueueTest, DeduplicatesAndKeepsOrder) {
  Workqueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  q.Add("c");
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(*q.Get(), "c");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkqueueTest, AnItemAddedWhileProcessingIsRequeuedOnDoneNotHandedOutTwice) {
  Workqueue q;
  q.Add("a");
  std::optional<std::string> item = q.Get();
  ASSERT_EQ(*item, "a");
  q.Add("a");  // While processing: not queued yet.
  q.Add("a");  // Collapses with the previous add.
  EXPECT_EQ(q.Len(), 0u);
  q.Add("b");
  EXPECT_EQ(*q.Get(), "b");
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  q.Done("b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkqueueTest, ConcurrentWorkersNeverShareAKey) {
  Workqueue q;
  std::atomic<int> in_flight_a{0}, max_in_flight_a{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto item = q.Get()) {
        if (*item == "a") {
          const int now = ++in_flight_a;
          int prev = max_in_flight_a.load();
          while (now > prev && !max_in_flight_a.compare_exchange_weak(prev, now)) {
          }
          std::this_thread::yield();
          --in_flight_a;
        }
        ++processed;
        q.Done(*item);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add(i % 2 ? "a" : "k" + std::to_string(i % 50));
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(max_in_flight_a.load(), 1);
  EXPECT_GT(processed.load(), 0);
}

TEST(WorkqueueTest, ShutDownReturnsQueuedItemsThenNulloptAndDrainWaitsForDone) {
  Workqueue q;
  q.Add("a");
  q.Add("b");
  std::optional<std::string> in_flight = q.Get();
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  while (!q.ShuttingDown()) std::this_thread::yield();
  q.Add("c");                // Dropped after shutdown.
  EXPECT_EQ(*q.Get(), "b");  // Queued items are still handed out.
  q.Done("b");
  EXPECT_FALSE(drained.load());  // "a" is still in flight.
  q.Done(*in_flight);
  drainer.join();
  EXPECT_TRUE(drained.load());
  EXPECT_FALSE(q.Get().has_value());
}

TEST(DelayingQueueTest, AddAfterWaitsForTheClock) {
  FakeClock clock;
  DelayingQueueOptions options;
  options.queue.clock = &clock;
  options.poll_interval = milliseconds(1);
  DelayingQueue q(options);
  q.AddAfter("late", milliseconds(100));
  q.AddAfter("early", milliseconds(50));
  q.AddAfter("late", milliseconds(200));  // Keeps the earlier time.
  q.AddAfter("now", milliseconds(0));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Waiting(), 2u);
  clock.Advance(milliseconds(60));
  q.ReleaseReady();
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "now");
  EXPECT_EQ(*q.Get(), "early");
  clock.Advance(milliseconds(40));
  q.ReleaseReady();
  EXPECT_EQ(*q.Get(), "late");
  EXPECT_EQ(q.Waiting(), 0u);
  // The background thread also notices the fake clock moving.
  q.AddAfter("bg", seconds(5));
  clock.Advance(seconds(5));
  EXPECT_EQ(*q.Get(), "bg");
  q.ShutDown();
}

TEST(RateLimiterTest, ItemExponentialDoublesFrom5msTo1000s) {
  ItemExponentialRateLimiter l;
  EXPECT_EQ(l.When("a"), milliseconds(5));
  EXPECT_EQ(l.When("a"), milliseconds(10));
  EXPECT_EQ(l.When("a"), milliseconds(20));
  EXPECT_EQ(l.When("b"), milliseconds(5));
  EXPECT_EQ(l.NumRequeues("a"), 3);
  for (int i = 0; i < 100; ++i) (void)l.When("a");
  EXPECT_EQ(l.When("a"), seconds(1000));
  l.Forget("a");
  EXPECT_EQ(l.NumRequeues("a"), 0);
  EXPECT_EQ(l.When("a"), milliseconds(5));
}

TEST(RateLimiterTest, DefaultIsMaxOfExponentialAndA10QpsBurst100Bucket) {
  FakeClock clock;
  std::unique_ptr<RateLimiter> l = DefaultControllerRateLimiter(clock);
  // 100 distinct items pass on their per-item delay; the 101st waits for the bucket.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l->When("k" + std::to_string(i)), milliseconds(5));
  EXPECT_EQ(l->When("k100"), milliseconds(100));
  EXPECT_EQ(l->When("k101"), milliseconds(200));
  clock.Advance(seconds(1));  // Refills ten tokens, which pay back the two borrowed.
  EXPECT_EQ(l->When("k102"), milliseconds(5));
  EXPECT_EQ(l->NumRequeues("k100"), 1);
  l->Forget("k100");
  EXPECT_EQ(l->NumRequeues("k100"), 0);
}

TEST(RateLimitingQueueTest, RetriesBackOffAndForgetResets) {
  FakeClock clock;
  metrics::Registry registry;
  DelayingQueueOptions options;
  options.queue.clock = &clock;
  options.queue.registry = &registry;
  options.queue.name = "rolloutpool";
  options.poll_interval = milliseconds(1);
  RateLimitingQueue q(options, std::make_unique<ItemExponentialRateLimiter>());
  q.Add("ns/p");
  ASSERT_EQ(*q.Get(), "ns/p");
  q.AddRateLimited("ns/p");  // Failed: retry after 5 ms.
  q.Done("ns/p");
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(milliseconds(5));
  q.ReleaseReady();
  ASSERT_EQ(*q.Get(), "ns/p");
  q.AddRateLimited("ns/p");  // Failed again: 10 ms.
  q.Done("ns/p");
  clock.Advance(milliseconds(9));
  q.ReleaseReady();
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(milliseconds(1));
  q.ReleaseReady();
  ASSERT_EQ(*q.Get(), "ns/p");
  EXPECT_EQ(q.NumRequeues("ns/p"), 2);
  q.Forget("ns/p");
  q.Done("ns/p");
  EXPECT_EQ(q.NumRequeues("ns/p"), 0);
  const std::string text = metrics::ExposeText(registry);
  EXPECT_NE(text.find("workqueue_retries_total{name=\"rolloutpool\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("workqueue_adds_total{name=\"rolloutpool\"} 3"), std::string::npos);
  EXPECT_NE(text.find("workqueue_depth{name=\"rolloutpool\"} 0"), std::string::npos);
  EXPECT_NE(text.find("workqueue_queue_duration_seconds_count{name=\"rolloutpool\"} 3"),
            std::string::npos);
  EXPECT_NE(text.find("workqueue_work_duration_seconds_count{name=\"rolloutpool\"} 3"),
            std::string::npos);
  q.ShutDown();
}

using sluice::test_support::Scraped;

TEST(WorkqueueMetricsTest, InProgressWorkGrowsWhileHeldAndDropsToZeroAfterDone) {
  FakeClock clock;
  metrics::Registry registry;
  auto unfinished = [&] {
    return Scraped(registry, "workqueue_unfinished_work_seconds", {"pools"});
  };
  auto longest = [&] {
    return Scraped(registry, "workqueue_longest_running_processor_seconds", {"pools"});
  };
  {
    Workqueue q({.name = "pools", .clock = &clock, .registry = &registry});
    EXPECT_EQ(unfinished(), 0.0);  // Exported (as 0) before any work.
    EXPECT_EQ(longest(), 0.0);
    q.Add("a");
    q.Add("b");
    clock.Advance(seconds(5));  // Waiting in the queue is not work.
    EXPECT_EQ(unfinished(), 0.0);
    ASSERT_EQ(*q.Get(), "a");
    clock.Advance(seconds(2));
    ASSERT_EQ(*q.Get(), "b");
    clock.Advance(seconds(1));
    // a: 3 s, b: 1 s.
    EXPECT_DOUBLE_EQ(*unfinished(), 4.0);
    EXPECT_DOUBLE_EQ(*longest(), 3.0);
    EXPECT_DOUBLE_EQ(q.UnfinishedWorkSeconds(), 4.0);
    EXPECT_DOUBLE_EQ(q.LongestRunningProcessorSeconds(), 3.0);
    clock.Advance(milliseconds(1500));  // Both keep growing while held.
    EXPECT_DOUBLE_EQ(*unfinished(), 7.0);
    EXPECT_DOUBLE_EQ(*longest(), 4.5);

    q.Done("a");  // Observed by work_duration now: leaves the in-progress sum.
    EXPECT_DOUBLE_EQ(*unfinished(), 2.5);
    EXPECT_DOUBLE_EQ(*longest(), 2.5);
    q.Add("b");  // Re-added while processing: queued again on Done, but not in progress.
    q.Done("b");
    EXPECT_EQ(unfinished(), 0.0);
    EXPECT_EQ(longest(), 0.0);
    clock.Advance(seconds(10));
    EXPECT_EQ(unfinished(), 0.0);  // b is queued, not being processed.

    ASSERT_EQ(*q.Get(), "b");  // Handed out again: counted from this Get, not the first one.
    clock.Advance(seconds(2));
    EXPECT_DOUBLE_EQ(*longest(), 2.0);
    q.Done("b");
    EXPECT_EQ(longest(), 0.0);

    const std::string text = metrics::ExposeText(registry);
    EXPECT_NE(text.find("# TYPE workqueue_unfinished_work_seconds gauge"), std::string::npos)
        << text;
    EXPECT_NE(text.find("# TYPE workqueue_longest_running_processor_seconds gauge"),
              std::string::npos);
    sluice::test_support::PromtoolCheck check = sluice::test_support::RunPromtoolCheckMetrics(text);
    if (check.available) {
      EXPECT_TRUE(check.passed) << check.output << "\n--- input ---\n" << text;
    }
  }
  // The queue is gone: its scrape-time series are removed (their functions read the queue).
  EXPECT_EQ(unfinished(), std::nullopt);
  EXPECT_EQ(longest(), std::nullopt);
  (void)metrics::ExposeText(registry);
}

TEST(WorkqueueMetricsTest, InProgressGaugesAreScrapedSafelyWhileWorkersRun) {
  metrics::Registry registry;
  Workqueue q({.name = "busy", .registry = &registry});
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::optional<double> v =
          Scraped(registry, "workqueue_unfinished_work_seconds", {"busy"});
      ASSERT_TRUE(v.has_value());
      EXPECT_GE(*v, 0.0);
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&] {
      while (auto item = q.Get()) q.Done(*item);
    });
  }
  for (int i = 0; i < 3000; ++i) q.Add("k" + std::to_string(i % 40));
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  done = true;
  scraper.join();
  EXPECT_EQ(Scraped(registry, "workqueue_unfinished_work_seconds", {"busy"}), 0.0);
  EXPECT_EQ(Scraped(registry, "workqueue_longest_running_processor_seconds", {"busy"}), 0.0);
}

}  // namespace
}  // namespace sluice::kube
