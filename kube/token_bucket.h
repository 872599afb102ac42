// TokenBucket: a rate limiter of `qps` tokens per second with room for `burst` tokens, on an
// injected Clock. Used for the REST client's client-side limit (client-go defaults 5 qps, burst
// 10), the workqueue's overall limiter (10 qps, burst 100) and the event recorder.
//
// Reserve() always takes a token, possibly one that will only exist in the future, and returns
// how long the caller must wait for it; so concurrent callers queue up fairly and a waiter
// never loses its place. The bucket starts full.
//
// Thread safety: every method may be called from any thread. The Clock must outlive the bucket.
#pragma once

#include <mutex>

#include "common/clock.h"
#include "common/token_bucket_state.h"

namespace sluice::kube {

class TokenBucket {
 public:
  // qps > 0, burst >= 1.
  TokenBucket(double qps, int burst, Clock& clock);

  // Takes a token; returns the wait until it is available (zero when one is there now).
  Clock::Duration Reserve();
  // Takes a token only if one is available now.
  bool TryAccept();
  // Reserve(), then sleeps on the clock for the wait. Returns the time waited.
  Clock::Duration Wait();

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  const double qps_;
  const int burst_;
  Clock& clock_;
  std::mutex mu_;
  TokenBucketState state_;  // Guarded by mu_.
};

}  // namespace sluice::kube
