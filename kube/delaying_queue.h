// DelayingQueue: a Workqueue that can also add an item after a delay (AddAfter), like
// client-go's delaying_queue. Waiting items sit in a min-heap ordered by ready time on the
// injected Clock; an item already waiting keeps the earlier of its two ready times.
//
// A background thread moves items whose time has come into the queue. It sleeps until the
// earliest ready time, but never longer than `poll_interval` of real time between checks of the
// Clock, so a FakeClock moved forward by a test is noticed; tests can also call ReleaseReady()
// to move ready items at once, deterministically.
//
// Ownership: owns its thread (joined on ShutDown or destruction).
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kube/workqueue.h"

namespace sluice::kube {

struct DelayingQueueOptions {
  WorkqueueOptions queue;
  std::chrono::milliseconds poll_interval{1000};
};

class DelayingQueue : public Workqueue {
 public:
  explicit DelayingQueue(DelayingQueueOptions options = {});
  ~DelayingQueue() override;

  // Adds `item` once `delay` of clock time has passed (at once when delay <= 0).
  void AddAfter(const std::string& item, Clock::Duration delay);
  // Moves every waiting item whose time has come into the queue; returns how many.
  size_t ReleaseReady();
  // Items waiting for their time.
  size_t Waiting() const;

  void ShutDown() override;
  void ShutDownWithDrain() override;

 private:
  struct Entry {
    Clock::MonoTime ready;
    uint64_t seq;
    std::string item;
    bool operator>(const Entry& o) const {
      return ready != o.ready ? ready > o.ready : seq > o.seq;
    }
  };
  void Loop();
  void StopThread();

  DelayingQueueOptions options_;
  mutable std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::unordered_map<std::string, Clock::MonoTime> waiting_;  // Current ready time per item.
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sluice::kube
