#include "common/process/cancellation.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace sluice {
namespace internal {

class CancellationState {
 public:
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

  bool Cancel() {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return false;
    cancelled_.store(true, std::memory_order_release);
    cancelling_thread_ = std::this_thread::get_id();
    cancelled_cv_.notify_all();
    // Each callback leaves the map before it runs, so a registration can tell "never ran" (in the
    // map) from "running" (running_id_) from "done" (neither), and the lock is not held while
    // user code runs.
    while (!callbacks_.empty()) {
      auto it = callbacks_.begin();
      running_id_ = it->first;
      std::function<void()> callback = std::move(it->second);
      callbacks_.erase(it);
      lock.unlock();
      RunCallback(callback);
      lock.lock();
      running_id_ = 0;
      callback_done_cv_.notify_all();
    }
    return true;
  }

  // Returns 0 when already cancelled; the caller then runs the callback itself.
  uint64_t Register(std::function<void()>& callback) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return 0;
    const uint64_t id = next_id_++;
    callbacks_.emplace(id, std::move(callback));
    return id;
  }

  void Unregister(uint64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    if (callbacks_.erase(id) > 0) return;
    // Running on another thread: wait, so the caller may then free what the callback uses. On
    // the cancelling thread this is the callback unregistering itself (or a nested one): waiting
    // would deadlock.
    if (cancelling_thread_ == std::this_thread::get_id()) return;
    callback_done_cv_.wait(lock, [&] { return running_id_ != id; });
  }

  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cancelled_cv_.wait_until(lock, deadline, [&] { return IsCancelled(); });
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cancelled_cv_.wait(lock, [&] { return IsCancelled(); });
  }

  // Keeps a child registered with its parent for as long as the child's state lives.
  void SetParentRegistration(CancellationRegistration registration) {
    parent_registration_ = std::move(registration);
  }

 private:
  // A throwing callback would leave running_id_ set and hang Unregister; noexcept turns it into
  // an immediate, diagnosable terminate instead.
  static void RunCallback(const std::function<void()>& callback) noexcept { callback(); }

  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cancelled_cv_;
  std::condition_variable callback_done_cv_;
  std::map<uint64_t, std::function<void()>> callbacks_;  // Ordered by id: registration order.
  uint64_t next_id_ = 1;
  uint64_t running_id_ = 0;
  std::thread::id cancelling_thread_;
  CancellationRegistration parent_registration_;
};

}  // namespace internal

namespace {

// Far enough to mean "forever" yet small enough that now() + it cannot overflow.
constexpr std::chrono::hours kLongestWait(24 * 365 * 100);

std::chrono::steady_clock::time_point DeadlineAfter(std::chrono::nanoseconds timeout) {
  return std::chrono::steady_clock::now() +
         std::min<std::chrono::nanoseconds>(timeout, kLongestWait);
}

}  // namespace

CancellationRegistration::CancellationRegistration(
    std::shared_ptr<internal::CancellationState> state, uint64_t id)
    : state_(std::move(state)), id_(id) {}

CancellationRegistration::CancellationRegistration(CancellationRegistration&& other) noexcept
    : state_(std::move(other.state_)), id_(other.id_) {
  other.id_ = 0;
}

CancellationRegistration& CancellationRegistration::operator=(
    CancellationRegistration&& other) noexcept {
  if (this != &other) {
    Reset();
    state_ = std::move(other.state_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

CancellationRegistration::~CancellationRegistration() { Reset(); }

void CancellationRegistration::Reset() {
  if (state_ != nullptr) state_->Unregister(id_);
  state_.reset();
  id_ = 0;
}

bool CancellationToken::IsCancelled() const { return state_ != nullptr && state_->IsCancelled(); }

bool CancellationToken::WaitFor(std::chrono::nanoseconds timeout) const {
  if (timeout <= std::chrono::nanoseconds::zero()) return IsCancelled();
  return WaitUntil(DeadlineAfter(timeout));
}

bool CancellationToken::WaitUntil(std::chrono::steady_clock::time_point deadline) const {
  if (state_ == nullptr) {
    std::this_thread::sleep_until(deadline);
    return false;
  }
  return state_->WaitUntil(deadline);
}

void CancellationToken::Wait() const {
  if (state_ != nullptr) {
    state_->Wait();
    return;
  }
  for (;;) std::this_thread::sleep_for(kLongestWait);
}

CancellationRegistration CancellationToken::OnCancel(std::function<void()> callback) const {
  if (state_ == nullptr) return {};
  const uint64_t id = state_->Register(callback);
  if (id == 0) {
    callback();
    return {};
  }
  return CancellationRegistration(state_, id);
}

CancellationSource::CancellationSource()
    : state_(std::make_shared<internal::CancellationState>()) {}

CancellationSource::CancellationSource(const CancellationToken& parent) : CancellationSource() {
  // The parent holds only a weak reference, so a forgotten child does not live as long as the
  // parent; the child's state unregisters from the parent when it dies.
  std::weak_ptr<internal::CancellationState> weak = state_;
  state_->SetParentRegistration(parent.OnCancel([weak] {
    if (auto child = weak.lock()) child->Cancel();
  }));
}

bool CancellationSource::Cancel() { return state_->Cancel(); }

bool CancellationSource::IsCancelled() const { return state_->IsCancelled(); }

}  // namespace sluice
