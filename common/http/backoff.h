// Exponential backoff with jitter, as a pure function so retry loops are testable.
//
// delay(attempt) = min(max_delay, base_delay * multiplier^attempt), then jittered:
// the result is drawn uniformly from [delay * (1 - jitter), delay]. jitter = 1 is "full
// jitter", which spreads a thundering herd of clients best; 0 disables it.
#pragma once

#include <chrono>

namespace sluice::http {

struct BackoffPolicy {
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{10000};
  double multiplier = 2.0;
  double jitter = 0.5;  // Fraction of the delay that is randomised, in [0, 1].
};

// `attempt` counts retries from 0; `unit_random` is a uniform sample in [0, 1).
std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int attempt,
                                       double unit_random);

}  // namespace sluice::http
