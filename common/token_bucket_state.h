// TokenBucketState: the arithmetic of a token bucket, `qps` tokens per second with room for
// `burst`, on monotonic times the owner passes in. It has no lock and no clock of its own, so
// the two rate limiters built on it share one copy of the refill rule and can be table-tested:
// kube::TokenBucket (the REST client's, workqueue's and event recorder's limit; one bucket) and
// the API server's ClientRateLimiter (one bucket per client).
//
// Tokens may go negative: Reserve() takes a token that only exists in the future, so callers
// that wait for their reservation queue up fairly. The bucket starts full.
//
// Thread safety: none; the owner guards it (both owners hold a mutex).
#pragma once

#include "common/clock.h"

namespace sluice {

class TokenBucketState {
 public:
  // qps > 0 and burst >= 1 (checked).
  TokenBucketState(double qps, double burst, Clock::MonoTime now);

  // Adds what was earned since the last refill, up to `burst`. Time that goes backwards earns
  // nothing.
  void Refill(Clock::MonoTime now);
  // Takes a token if a whole one is there.
  bool TryTake();
  // Takes a token even if it is not there yet; returns how long until it is (zero when now).
  // Waits are capped at a year.
  Clock::Duration Reserve();
  // How long until a whole token is there (zero when one is).
  Clock::Duration TimeUntilToken() const;

  double tokens() const { return tokens_; }
  double qps() const { return qps_; }
  double burst() const { return burst_; }

 private:
  double qps_;
  double burst_;
  double tokens_;
  Clock::MonoTime last_;
};

}  // namespace sluice
