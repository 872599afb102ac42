#include "common/http/backoff.h"

#include <algorithm>
#include <cmath>

namespace sluice::http {

std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int attempt,
                                       double unit_random) {
  const double base = static_cast<double>(policy.base_delay.count());
  const double cap = static_cast<double>(policy.max_delay.count());
  // pow overflows to inf for large attempts; min() then caps it, so no special case needed.
  const double exp = base * std::pow(std::max(policy.multiplier, 1.0), std::max(attempt, 0));
  const double delay = std::min(cap, exp);
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  const double u = std::clamp(unit_random, 0.0, 1.0);
  const double jittered = delay * (1.0 - jitter) + delay * jitter * u;
  return std::chrono::milliseconds(static_cast<int64_t>(jittered));
}

}  // namespace sluice::http
