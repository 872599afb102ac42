#include "kube/token_bucket.h"

namespace sluice::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), state_(qps, burst, clock.Now()) {}

Clock::Duration TokenBucket::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.Refill(clock_.Now());
  return state_.Reserve();
}

bool TokenBucket::TryAccept() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.Refill(clock_.Now());
  return state_.TryTake();
}

Clock::Duration TokenBucket::Wait() {
  const Clock::Duration d = Reserve();
  if (d > Clock::Duration::zero()) clock_.SleepFor(d);
  return d;
}

}  // namespace sluice::kube
