#include "kube/token_bucket.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"

namespace sluice::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.Now()) {
  SLUICE_CHECK(qps > 0 && burst >= 1);
}

void TokenBucket::RefillLocked(Clock::MonoTime now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

Clock::Duration TokenBucket::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Clock::Duration::zero();
  return std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucket::TryAccept() {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

Clock::Duration TokenBucket::Wait() {
  const Clock::Duration d = Reserve();
  if (d > Clock::Duration::zero()) clock_.SleepFor(d);
  return d;
}

}  // namespace sluice::kube
