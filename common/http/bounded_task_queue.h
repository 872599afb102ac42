// BoundedTaskQueue: the HTTP server's worker pool, with a bounded backlog.
//
// cpp-httplib hands every accepted connection to a TaskQueue. Its own ThreadPool queues
// without bound, so a burst of connections grows memory and latency without limit. This queue
// runs `threads` workers and holds at most `max_queued` waiting connections; when it is full,
// Enqueue blocks the accept loop, so further clients wait in the kernel's listen backlog
// (bounded by the OS) instead of in our memory.
//
// Thread safety: Enqueue from the accept thread, Shutdown once; counters from any thread.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::http {

class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(size_t threads, size_t max_queued);
  ~BoundedTaskQueue() override;
  BoundedTaskQueue(const BoundedTaskQueue&) = delete;
  BoundedTaskQueue& operator=(const BoundedTaskQueue&) = delete;

  // Blocks while max_queued tasks are waiting. After shutdown the task is dropped.
  void enqueue(std::function<void()> fn) override;
  // Runs the tasks already queued, then joins the workers.
  void shutdown() override;

  size_t queued() const;
  size_t busy() const;
  // Callers of enqueue blocked now, waiting for room (tests wait for one instead of sleeping).
  size_t blocked() const;

 private:
  void Work();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<std::function<void()>> tasks_;
  size_t busy_ = 0;
  size_t blocked_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace sluice::http
