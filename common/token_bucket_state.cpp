#include "common/token_bucket_state.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"

namespace sluice {
namespace {

// Capped at a year, so that a tiny qps cannot overflow the conversion.
Clock::Duration Seconds(double s) {
  s = std::min(s, 365.0 * 86400);
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(s));
}

}  // namespace

TokenBucketState::TokenBucketState(double qps, double burst, Clock::MonoTime now)
    : qps_(qps), burst_(burst), tokens_(burst), last_(now) {
  SLUICE_CHECK(qps > 0 && burst >= 1);
}

void TokenBucketState::Refill(Clock::MonoTime now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

bool TokenBucketState::TryTake() {
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

Clock::Duration TokenBucketState::Reserve() {
  tokens_ -= 1.0;
  return tokens_ >= 0 ? Clock::Duration::zero() : Seconds(-tokens_ / qps_);
}

Clock::Duration TokenBucketState::TimeUntilToken() const {
  return tokens_ >= 1.0 ? Clock::Duration::zero() : Seconds((1.0 - tokens_) / qps_);
}

}  // namespace sluice
