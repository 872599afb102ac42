#include "common/http/bounded_task_queue.h"

#include <algorithm>

namespace sluice::http {

namespace {
thread_local bool t_refusing = false;
}  // namespace

BoundedTaskQueue::BoundedTaskQueue(size_t threads, size_t max_queued, size_t max_refusing)
    : max_queued_(std::max<size_t>(max_queued, 1)), max_refusing_(max_refusing) {
  threads = std::max<size_t>(threads, 1);
  workers_.reserve(threads + 1);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  if (max_refusing_ > 0) workers_.emplace_back([this] { Refuse(); });
}

bool BoundedTaskQueue::RunningAsRefusal() { return t_refusing; }

BoundedTaskQueue::~BoundedTaskQueue() { shutdown(); }

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!shutdown_ && tasks_.size() >= max_queued_ && refusals_.size() < max_refusing_) {
    refusals_.push_back(std::move(fn));
    refusal_ready_.notify_one();
    return;
  }
  ++blocked_;  // Visible to others only while the wait has released mu_.
  not_full_.wait(lock, [&] {
    return shutdown_ || tasks_.size() < max_queued_ || refusals_.size() < max_refusing_;
  });
  --blocked_;
  if (shutdown_) return;
  if (tasks_.size() < max_queued_) {
    tasks_.push_back(std::move(fn));
    not_empty_.notify_one();
  } else {
    refusals_.push_back(std::move(fn));
    refusal_ready_.notify_one();
  }
}

void BoundedTaskQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_ && workers_.empty()) return;
    shutdown_ = true;
  }
  not_empty_.notify_all();
  not_full_.notify_all();
  refusal_ready_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  workers_.clear();
}

size_t BoundedTaskQueue::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

size_t BoundedTaskQueue::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

size_t BoundedTaskQueue::blocked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocked_;
}

size_t BoundedTaskQueue::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

void BoundedTaskQueue::Refuse() {
  t_refusing = true;
  while (std::function<void()> task = Next(refusal_ready_, refusals_, refused_)) task();
}

void BoundedTaskQueue::Work() {
  for (;;) {
    std::function<void()> task = Next(not_empty_, tasks_, busy_);
    if (!task) return;
    task();
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

std::function<void()> BoundedTaskQueue::Next(std::condition_variable& ready,
                                             std::deque<std::function<void()>>& from,
                                             size_t& taken) {
  std::function<void()> task;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ready.wait(lock, [&] { return shutdown_ || !from.empty(); });
    if (from.empty()) return task;  // Shut down and drained.
    task = std::move(from.front());
    from.pop_front();
    ++taken;
  }
  not_full_.notify_one();
  return task;
}

}  // namespace sluice::http
