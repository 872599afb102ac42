// Workqueue: the de-duplicating work queue between informers and reconcilers, like client-go's
// util/workqueue Type.
//
// Guarantees:
//   * Fair: items are handed out in the order they were added.
//   * Stingy: an item added several times before it is processed is processed once.
//   * One worker per item: an item is never handed to two workers at once. An item added while
//     it is being processed is re-queued when Done(item) is called, so the change is not lost.
// These come from two sets: `dirty` (items that need processing: queued, or re-added while
// processing) and `processing` (items handed out by Get and not yet Done). An item is in
// `queue_` only if it is dirty and not processing.
//
// Shutdown: ShutDown() makes Add a no-op and wakes every Get; Get keeps returning items already
// queued, then nullopt. ShutDownWithDrain() also waits until every item handed out is Done, so
// in-flight work finishes (a worker must not call Add-and-wait during drain).
//
// Metrics (client-go names, label `name`): workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds (add to Get), workqueue_work_duration_seconds (Get to Done),
// workqueue_retries_total (counted by the rate-limiting layer), and two gauges computed at
// scrape time from the items handed out by Get and not yet Done, with client-go's meaning:
// workqueue_unfinished_work_seconds (the sum over those items of now - Get time: work in
// progress that work_duration has not observed yet; its rate of growth is the number of stuck
// workers) and workqueue_longest_running_processor_seconds (the largest of those ages). Both
// are 0 when nothing is being processed. (client-go refreshes them every 500 ms; here they are
// exact at each scrape.) The scrape-time gauges are installed per `name` and removed when the
// queue is destroyed (or by RemoveScrapeMetrics), so `name` must be unique among the live queues
// of one registry.
//
// Ownership: the Clock must outlive the queue; so must the Registry, unless RemoveScrapeMetrics
// was called while it lived and the queue is shut down (then nothing touches it again).
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"
#include "common/metrics/registry.h"

namespace sluice::kube {

struct WorkqueueOptions {
  std::string name = "default";           // The metrics label.
  Clock* clock = nullptr;                 // Null: the system clock.
  metrics::Registry* registry = nullptr;  // Null: no metrics.
};

class Workqueue {
 public:
  explicit Workqueue(WorkqueueOptions options = {});
  virtual ~Workqueue();
  Workqueue(const Workqueue&) = delete;
  Workqueue& operator=(const Workqueue&) = delete;

  // Marks `item` as needing processing. No-op after shutdown.
  void Add(const std::string& item);
  // Items waiting to be handed out (not counting those being processed).
  size_t Len() const;
  // Blocks until an item is available; nullopt once shut down and empty. The caller must call
  // Done(item) when finished with it.
  std::optional<std::string> Get();
  // Marks `item` as processed; if it was added again meanwhile, it is queued again.
  void Done(const std::string& item);
  virtual void ShutDown();
  // ShutDown, then waits until every handed-out item is Done.
  virtual void ShutDownWithDrain();
  bool ShuttingDown() const;

  Clock& clock() const { return *clock_; }

  // The metrics' values now, in seconds (see above); for the scrape-time gauges and tests.
  double UnfinishedWorkSeconds() const;
  double LongestRunningProcessorSeconds() const;
  // Removes the scrape-time gauges from the registry now instead of in the destructor, for an
  // owner whose queue may outlive the registry (Controller). Idempotent.
  void RemoveScrapeMetrics();

 protected:
  void CountRetry();

 private:
  struct Metrics;
  WorkqueueOptions options_;
  Clock* clock_;
  std::unique_ptr<Metrics> metrics_;
  std::atomic<bool> scrape_metrics_installed_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  std::unordered_map<std::string, Clock::MonoTime> added_at_;    // For queue duration.
  std::unordered_map<std::string, Clock::MonoTime> started_at_;  // For work duration.
  bool shutting_down_ = false;
  bool draining_ = false;
};

}  // namespace sluice::kube
