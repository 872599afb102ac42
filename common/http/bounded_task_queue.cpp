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
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      refusal_ready_.wait(lock, [&] { return shutdown_ || !refusals_.empty(); });
      if (refusals_.empty()) return;  // Shut down and drained.
      task = std::move(refusals_.front());
      refusals_.pop_front();
      ++refused_;
    }
    not_full_.notify_one();
    task();
  }
}

void BoundedTaskQueue::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      not_empty_.wait(lock, [&] { return shutdown_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // Shut down and drained.
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++busy_;
    }
    not_full_.notify_one();
    task();
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

}  // namespace sluice::http
