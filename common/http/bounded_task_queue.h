// BoundedTaskQueue: the HTTP server's worker pool, with a bounded backlog.
//
// cpp-httplib hands every accepted connection to a TaskQueue. Its own ThreadPool queues
// without bound, so a burst of connections grows memory and latency without limit. This queue
// runs `threads` workers and holds at most `max_queued` waiting connections. When it is full,
// a connection is refused instead, if the queue was given room for refusals: the task runs on
// the queue's one refusal thread with RunningAsRefusal() true, and the server answers it 503 at
// once (deadline_server.h), so that a client learns to come back instead of waiting behind
// everyone else. When the refusals are full too (or there are none), Enqueue blocks the accept
// loop, so further clients wait in the kernel's listen backlog (bounded by the OS) instead of in
// our memory.
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
  // `max_refusing`: refusals that may wait for the refusal thread; 0 never refuses.
  BoundedTaskQueue(size_t threads, size_t max_queued, size_t max_refusing = 0);
  ~BoundedTaskQueue() override;
  BoundedTaskQueue(const BoundedTaskQueue&) = delete;
  BoundedTaskQueue& operator=(const BoundedTaskQueue&) = delete;

  // Queues `fn`; when max_queued tasks are waiting, queues it as a refusal instead; blocks while
  // both are full. After shutdown the task is dropped.
  void enqueue(std::function<void()> fn) override;
  // Runs the tasks (and refusals) already queued, then joins the workers.
  void shutdown() override;

  size_t queued() const;
  size_t busy() const;
  // Callers of enqueue blocked now, waiting for room (tests wait for one instead of sleeping).
  size_t blocked() const;
  // Tasks run as refusals so far.
  size_t refused() const;

  // True on the thread running a task as a refusal (the server answers it 503).
  static bool RunningAsRefusal();

 private:
  void Work();
  void Refuse();
  // Waits on `ready` for a task in `from` and takes it, counting it in `taken`; an empty
  // function once shut down and drained.
  std::function<void()> Next(std::condition_variable& ready,
                             std::deque<std::function<void()>>& from, size_t& taken);

  const size_t max_queued_;
  const size_t max_refusing_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::condition_variable refusal_ready_;
  std::deque<std::function<void()>> tasks_;
  std::deque<std::function<void()>> refusals_;
  size_t busy_ = 0;
  size_t refused_ = 0;
  size_t blocked_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> workers_;  // The refusal thread too, when there is one.
};

}  // namespace sluice::http
