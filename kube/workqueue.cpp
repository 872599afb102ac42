#include "kube/workqueue.h"

#include <algorithm>
#include <chrono>

namespace sluice::kube {

namespace {
const std::vector<double> kDurationBuckets = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                              1e-2, 0.1,  1,    10,   100,  1000};
double Seconds(Clock::Duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

struct Workqueue::Metrics {
  metrics::Gauge* depth;
  metrics::Counter* adds;
  metrics::Histogram* queue_duration;
  metrics::Histogram* work_duration;
  metrics::Counter* retries;
  // Scrape-time gauges whose functions read this queue: removed by RemoveScrapeMetrics.
  metrics::CallbackFamily* unfinished_work;
  metrics::CallbackFamily* longest_running;
};

Workqueue::Workqueue(WorkqueueOptions options)
    : options_(std::move(options)), clock_(&ClockOrSystem(options_.clock)) {
  if (metrics::Registry* r = options_.registry) {
    const std::vector<std::string> labels = {options_.name};
    metrics_ = std::make_unique<Metrics>(Metrics{
        &r->AddGauge("workqueue_depth", "Current depth of workqueue", {"name"}).WithLabels(labels),
        &r->AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue",
                       {"name"})
             .WithLabels(labels),
        &r->AddHistogram("workqueue_queue_duration_seconds",
                         "How long in seconds an item stays in workqueue before being requested.",
                         {"name"}, kDurationBuckets)
             .WithLabels(labels),
        &r->AddHistogram("workqueue_work_duration_seconds",
                         "How long in seconds processing an item from workqueue takes.", {"name"},
                         kDurationBuckets)
             .WithLabels(labels),
        &r->AddCounter("workqueue_retries_total", "Total number of retries handled by workqueue",
                       {"name"})
             .WithLabels(labels),
        &r->AddCallbackGauge("workqueue_unfinished_work_seconds",
                             "How many seconds of work has been done that is in progress and "
                             "has not been observed by work_duration. Large values indicate "
                             "stuck threads.",
                             {"name"}),
        &r->AddCallbackGauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor for workqueue has been running.",
            {"name"})});
    metrics_->unfinished_work->Set(labels, [this] { return UnfinishedWorkSeconds(); });
    metrics_->longest_running->Set(labels, [this] { return LongestRunningProcessorSeconds(); });
    scrape_metrics_installed_ = true;
  }
}

Workqueue::~Workqueue() { RemoveScrapeMetrics(); }

void Workqueue::RemoveScrapeMetrics() {
  // Once Remove returns the functions (which read this queue) are not running and never will.
  if (metrics_ && scrape_metrics_installed_.exchange(false)) {
    metrics_->unfinished_work->Remove({options_.name});
    metrics_->longest_running->Remove({options_.name});
  }
}

double Workqueue::UnfinishedWorkSeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::MonoTime now = clock_->Now();
  double total = 0;
  for (const auto& [item, started] : started_at_) total += Seconds(now - started);
  return total;
}

double Workqueue::LongestRunningProcessorSeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::MonoTime now = clock_->Now();
  Clock::Duration longest{0};
  for (const auto& [item, started] : started_at_) longest = std::max(longest, now - started);
  return Seconds(longest);
}

void Workqueue::Add(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  if (!dirty_.insert(item).second) return;  // Already pending: collapses into that add.
  if (metrics_) metrics_->adds->Inc();
  added_at_.emplace(item, clock_->Now());
  if (processing_.count(item)) return;  // Re-queued by Done.
  queue_.push_back(item);
  if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
  cv_.notify_one();
}

size_t Workqueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

std::optional<std::string> Workqueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;
  std::string item = std::move(queue_.front());
  queue_.pop_front();
  const Clock::MonoTime now = clock_->Now();
  if (metrics_) {
    metrics_->depth->Set(static_cast<double>(queue_.size()));
    auto it = added_at_.find(item);
    if (it != added_at_.end()) metrics_->queue_duration->Observe(Seconds(now - it->second));
  }
  added_at_.erase(item);
  started_at_[item] = now;
  processing_.insert(item);
  dirty_.erase(item);
  return item;
}

void Workqueue::Done(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (processing_.erase(item) == 0) return;
  if (auto it = started_at_.find(item); it != started_at_.end()) {
    if (metrics_) metrics_->work_duration->Observe(Seconds(clock_->Now() - it->second));
    started_at_.erase(it);
  }
  if (dirty_.count(item)) {
    queue_.push_back(item);
    if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
    cv_.notify_one();
  } else if (processing_.empty()) {
    cv_.notify_all();  // A drain may be waiting.
  }
}

void Workqueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

void Workqueue::ShutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  draining_ = true;
  cv_.notify_all();
  cv_.wait(lock, [this] { return processing_.empty(); });
}

bool Workqueue::ShuttingDown() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

void Workqueue::CountRetry() {
  if (metrics_) metrics_->retries->Inc();
}

}  // namespace sluice::kube
