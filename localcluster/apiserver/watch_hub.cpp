#include "localcluster/apiserver/watch_hub.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::apiserver {
namespace {

Status TooOld(uint64_t revision, uint64_t oldest) {
  return Status::Gone("too old resource version: " + std::to_string(revision) + " (" +
                      std::to_string(oldest) + ")");
}

// One watcher's position and queue. Every field is guarded by WatchHub::Core::mu.
struct WatcherState {
  std::string resource;
  std::optional<std::string> ns;  // nullopt: all namespaces.
  uint64_t from = 0;              // Only events with revision > from are delivered.
  // Replay: ring events with revision in (replay_after, replay_until]; done when equal.
  uint64_t replay_after = 0;
  uint64_t replay_until = 0;
  // Live events (revision > replay_until), at most watcher_queue_capacity.
  std::deque<WatchEventPtr> queue;
  uint64_t delivered = 0;  // Revision of the last event returned by Next (from before any).
  bool waiting = false;    // A Next is blocked on cv.
  bool closed = false;
  Status status;  // Why it closed.
  std::condition_variable cv;

  bool Matches(const WatchEvent& event) const {
    return event.key.resource == resource && (!ns.has_value() || event.key.ns == *ns);
  }
};

}  // namespace

struct WatchHub::Core {
  explicit Core(const WatchHubOptions& opts, uint64_t revision)
      : options(opts), current_revision(revision), oldest_watchable(revision) {}

  // Marks `w` closed with `why` and wakes its reader. The caller removes it from `watchers`.
  static void CloseLocked(WatcherState& w, Status why) {
    if (w.closed) return;
    w.closed = true;
    w.status = std::move(why);
    w.queue.clear();
    w.cv.notify_all();
  }

  void RemoveClosedLocked() {
    std::erase_if(watchers, [](const std::shared_ptr<WatcherState>& w) { return w->closed; });
  }

  // The next event for `w`, or null when none is pending (w may have been closed).
  WatchEventPtr TakeLocked(WatcherState& w) {
    if (w.replay_after < w.replay_until) {
      if (w.replay_after < oldest_watchable) {
        CloseLocked(w, TooOld(w.replay_after, oldest_watchable));
        RemoveClosedLocked();
        return nullptr;
      }
      auto it = std::upper_bound(
          history.begin(), history.end(), w.replay_after,
          [](uint64_t rev, const WatchEventPtr& event) { return rev < event->revision; });
      for (; it != history.end() && (*it)->revision <= w.replay_until; ++it) {
        if (w.Matches(**it)) {
          w.replay_after = (*it)->revision;
          w.delivered = w.replay_after;
          return *it;
        }
      }
      w.replay_after = w.replay_until;
    }
    if (w.queue.empty()) return nullptr;
    WatchEventPtr event = std::move(w.queue.front());
    w.queue.pop_front();
    w.delivered = event->revision;
    return event;
  }

  const WatchHubOptions options;
  mutable std::mutex mu;
  std::deque<WatchEventPtr> history;  // Increasing revisions; at most history_capacity.
  uint64_t current_revision;
  uint64_t oldest_watchable;                            // Every event after it is in `history`.
  std::vector<std::shared_ptr<WatcherState>> watchers;  // Open ones only.
  bool hub_closed = false;
};

namespace {

class HubWatcher final : public Watcher {
 public:
  HubWatcher(std::shared_ptr<WatchHub::Core> core, std::shared_ptr<WatcherState> state)
      : core_(std::move(core)), state_(std::move(state)) {}
  ~HubWatcher() override { Stop(); }

  WatchNext WaitNext(std::chrono::nanoseconds timeout, const CancellationToken& cancel) override {
    CancellationRegistration registration;  // Destroyed after `lock` is released.
    if (cancel.CanBeCancelled()) {
      registration = cancel.OnCancel([core = core_, state = state_] {
        std::lock_guard<std::mutex> lock(core->mu);
        state->cv.notify_all();
      });
    }
    using SteadyClock = std::chrono::steady_clock;
    const SteadyClock::time_point now = SteadyClock::now();
    // A timeout too large to add to now() is no timeout.
    const bool forever = timeout >= SteadyClock::time_point::max() - now;
    const SteadyClock::time_point deadline =
        forever ? SteadyClock::time_point::max() : now + timeout;

    std::unique_lock<std::mutex> lock(core_->mu);
    WatcherState& w = *state_;
    while (true) {
      if (w.closed) return Closed(w);
      if (WatchEventPtr event = core_->TakeLocked(w)) {
        return {WatchNext::Kind::kEvent, std::move(event), Status::Ok()};
      }
      if (w.closed) return Closed(w);
      if (cancel.IsCancelled()) return {WatchNext::Kind::kCancelled, nullptr, Status::Ok()};
      if (!forever && SteadyClock::now() >= deadline) {
        return {WatchNext::Kind::kTimeout, nullptr, Status::Ok()};
      }
      w.waiting = true;
      if (forever) {
        w.cv.wait(lock);
      } else {
        w.cv.wait_until(lock, deadline);
      }
      w.waiting = false;
    }
  }

  void Stop() override {
    std::lock_guard<std::mutex> lock(core_->mu);
    if (state_->closed) return;
    WatchHub::Core::CloseLocked(*state_, Status::Cancelled("watch stopped"));
    core_->RemoveClosedLocked();
  }

  uint64_t BookmarkRevision() const override {
    std::lock_guard<std::mutex> lock(core_->mu);
    const WatcherState& w = *state_;
    if (w.closed || w.replay_after < w.replay_until) return w.delivered;
    // Queued events are newer than everything delivered and every revision skipped before them.
    if (!w.queue.empty()) return std::max(w.delivered, w.queue.front()->revision - 1);
    return std::max(core_->current_revision, w.delivered);
  }

 private:
  static WatchNext Closed(const WatcherState& w) {
    return {WatchNext::Kind::kClosed, nullptr, w.status};
  }

  const std::shared_ptr<WatchHub::Core> core_;
  const std::shared_ptr<WatcherState> state_;
};

}  // namespace

WatchHub::WatchHub(const WatchHubOptions& options, uint64_t current_revision)
    : core_(std::make_shared<Core>(options, current_revision)) {
  SLUICE_CHECK(options.history_capacity >= 1);
  SLUICE_CHECK(options.watcher_queue_capacity >= 1);
}

WatchHub::WatchHub(const WatchHubOptions& options, uint64_t current_revision,
                   std::vector<WatchEventPtr> history)
    : WatchHub(options, current_revision) {
  if (history.size() > options.history_capacity) {
    history.erase(history.begin(),
                  history.end() - static_cast<std::ptrdiff_t>(options.history_capacity));
  }
  if (history.empty()) return;
  SLUICE_CHECK(history.back()->revision == current_revision);
  for (size_t i = 1; i < history.size(); ++i) {
    SLUICE_CHECK(history[i]->revision == history[i - 1]->revision + 1);
  }
  core_->oldest_watchable = history.front()->revision - 1;
  core_->history.assign(history.begin(), history.end());
}

WatchHub::~WatchHub() {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->hub_closed = true;
  for (const std::shared_ptr<WatcherState>& w : core_->watchers) {
    Core::CloseLocked(*w, Status::Unavailable("storage closed"));
  }
  core_->watchers.clear();
}

void WatchHub::Publish(WatchEventPtr event) {
  std::lock_guard<std::mutex> lock(core_->mu);
  Core& core = *core_;
  SLUICE_CHECK(event->revision > core.current_revision);
  core.current_revision = event->revision;
  core.history.push_back(event);
  while (core.history.size() > core.options.history_capacity) {
    core.oldest_watchable = core.history.front()->revision;
    core.history.pop_front();
  }
  bool any_closed = false;
  for (const std::shared_ptr<WatcherState>& w : core.watchers) {
    if (event->revision <= w->from || !w->Matches(*event)) continue;
    if (w->queue.size() >= core.options.watcher_queue_capacity) {
      Core::CloseLocked(
          *w, Status::Unavailable("watcher too slow: more than " +
                                  std::to_string(core.options.watcher_queue_capacity) +
                                  " events pending; resume from the last resourceVersion seen"));
      any_closed = true;
      continue;
    }
    w->queue.push_back(event);
    if (w->waiting) w->cv.notify_one();
  }
  if (any_closed) core.RemoveClosedLocked();
}

Result<std::unique_ptr<Watcher>> WatchHub::Watch(const std::string& resource,
                                                 const std::optional<std::string>& ns,
                                                 uint64_t from_revision) {
  if (resource.empty()) return Status::InvalidArgument("resource must be set", "resource");
  std::lock_guard<std::mutex> lock(core_->mu);
  Core& core = *core_;
  if (core.hub_closed) return Status::Unavailable("storage closed");
  const uint64_t from = from_revision == 0 ? core.current_revision : from_revision;
  if (from < core.oldest_watchable) return TooOld(from, core.oldest_watchable);
  auto state = std::make_shared<WatcherState>();
  state->resource = resource;
  state->ns = ns;
  state->from = from;
  state->replay_after = from;
  state->replay_until = std::max(from, core.current_revision);
  state->delivered = from;
  core.watchers.push_back(state);
  return std::unique_ptr<Watcher>(std::make_unique<HubWatcher>(core_, std::move(state)));
}

uint64_t WatchHub::CurrentRevision() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->current_revision;
}

uint64_t WatchHub::OldestWatchableRevision() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->oldest_watchable;
}

size_t WatchHub::WatcherCount() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->watchers.size();
}

}  // namespace sluice::apiserver
