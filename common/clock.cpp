#include "common/clock.h"

#include <iterator>
#include <thread>

namespace sluice {

void SystemClock::SleepFor(Duration d) { std::this_thread::sleep_for(d); }

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

FakeClock::FakeClock()
    : mono_(MonoTime(std::chrono::hours(1000))),
      // 2026-01-01T00:00:00Z, so wall timestamps in tests are stable and readable.
      wall_(WallTime(std::chrono::seconds(1767225600))) {}

Clock::MonoTime FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mono_;
}

Clock::WallTime FakeClock::WallNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_;
}

void FakeClock::SleepFor(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  const MonoTime until = mono_ + d;
  ++sleepers_;
  auto it = deadlines_.insert(until);
  cv_.wait(lock, [&] { return mono_ >= until; });
  deadlines_.erase(it);
  --sleepers_;
}

int FakeClock::Sleepers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sleepers_;
}

int FakeClock::PendingSleepers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::distance(deadlines_.upper_bound(mono_), deadlines_.end()));
}

void FakeClock::Advance(Duration d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mono_ += d;
    wall_ += std::chrono::duration_cast<WallTime::duration>(d);
  }
  cv_.notify_all();
}

}  // namespace sluice
