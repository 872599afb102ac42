// Clock: the only source of time for Sluice code below main().
//
// Workqueues, leases, backoff, autoscaler windows and timeouts take a `Clock&` so tests drive
// time with FakeClock instead of sleeping. Monotonic time measures intervals; wall time is for
// timestamps shown to people and written to the Kubernetes API.
//
// Thread safety: every method of both implementations may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

namespace sluice {

class Clock {
 public:
  using MonoTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;
  using Duration = std::chrono::nanoseconds;

  virtual ~Clock() = default;
  virtual MonoTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
  // Blocks the calling thread for `d` of this clock's time (FakeClock: until Advance passes it).
  virtual void SleepFor(Duration d) = 0;
};

// The real clocks of the machine.
class SystemClock final : public Clock {
 public:
  MonoTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  void SleepFor(Duration d) override;

  // A process-wide instance; lives for the whole program.
  static SystemClock& Instance();
};

// `clock`, or the process-wide system clock when it is null: what the optional clock of an
// options struct means ("null: the system clock").
inline Clock& ClockOrSystem(Clock* clock) {
  return clock != nullptr ? *clock : SystemClock::Instance();
}
inline const Clock& ClockOrSystem(const Clock* clock) {
  return clock != nullptr ? *clock : SystemClock::Instance();
}

// A clock that moves only when told to. Starts at an arbitrary fixed point.
class FakeClock final : public Clock {
 public:
  FakeClock();
  MonoTime Now() const override;
  WallTime WallNow() const override;
  // Returns once Advance has moved the clock past now + d.
  void SleepFor(Duration d) override;

  void Advance(Duration d);
  // Threads blocked in SleepFor now; tests wait for a sleeper before advancing past it.
  int Sleepers() const;
  // Of those, the ones whose wake-up time has not come yet (a thread whose time has come but
  // that has not run yet is not counted): what a test that advances on demand should look at,
  // so a slow wake-up under load is not mistaken for a sleeper still waiting.
  int PendingSleepers() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  MonoTime mono_;
  WallTime wall_;
  int sleepers_ = 0;
  std::multiset<MonoTime> deadlines_;  // One per thread in SleepFor.
};

}  // namespace sluice
