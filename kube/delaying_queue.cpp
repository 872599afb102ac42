#include "kube/delaying_queue.h"

namespace sluice::kube {

DelayingQueue::DelayingQueue(DelayingQueueOptions options)
    : Workqueue(options.queue), options_(std::move(options)), thread_([this] { Loop(); }) {}

DelayingQueue::~DelayingQueue() { StopThread(); }

void DelayingQueue::AddAfter(const std::string& item, Clock::Duration delay) {
  if (ShuttingDown()) return;
  if (delay <= Clock::Duration::zero()) {
    Add(item);
    return;
  }
  const Clock::MonoTime ready = clock().Now() + delay;
  std::lock_guard<std::mutex> lock(wait_mu_);
  auto it = waiting_.find(item);
  if (it != waiting_.end() && it->second <= ready) return;  // Already due earlier.
  waiting_[item] = ready;
  heap_.push({ready, seq_++, item});  // A superseded entry is skipped when popped.
  wait_cv_.notify_one();
}

size_t DelayingQueue::ReleaseReady() {
  std::vector<std::string> ready;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    const Clock::MonoTime now = clock().Now();
    while (!heap_.empty() && heap_.top().ready <= now) {
      Entry e = heap_.top();
      heap_.pop();
      auto it = waiting_.find(e.item);
      if (it == waiting_.end() || it->second != e.ready) continue;  // Superseded.
      waiting_.erase(it);
      ready.push_back(std::move(e.item));
    }
  }
  for (const std::string& item : ready) Add(item);
  return ready.size();
}

size_t DelayingQueue::Waiting() const {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return waiting_.size();
}

void DelayingQueue::Loop() {
  for (;;) {
    ReleaseReady();
    std::unique_lock<std::mutex> lock(wait_mu_);
    if (stop_) return;
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.poll_interval);
    if (!heap_.empty()) {
      wait = std::min(wait, std::max(std::chrono::nanoseconds(0),
                                     std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         heap_.top().ready - clock().Now())));
    }
    wait_cv_.wait_for(lock, wait);
    if (stop_) return;
  }
}

void DelayingQueue::StopThread() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    stop_ = true;
    wait_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void DelayingQueue::ShutDown() {
  Workqueue::ShutDown();
  StopThread();
}

void DelayingQueue::ShutDownWithDrain() {
  StopThread();
  Workqueue::ShutDownWithDrain();
}

}  // namespace sluice::kube
