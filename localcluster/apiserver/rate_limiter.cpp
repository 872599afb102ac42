#include "localcluster/apiserver/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace sluice::apiserver {

ClientRateLimiter::ClientRateLimiter(Options options, Clock* clock)
    : options_{options.qps, std::max(options.burst, 1.0), std::max<size_t>(options.max_clients, 1)},
      clock_(clock) {}

bool ClientRateLimiter::Allow(std::string_view client, std::chrono::seconds* retry_after) {
  if (options_.qps <= 0) return true;
  const Clock::MonoTime now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  Bucket* bucket;
  if (auto it = index_.find(client); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);  // Iterators stay valid.
    bucket = &lru_.front();
    bucket->state.Refill(now);
  } else {
    if (lru_.size() >= options_.max_clients) {
      index_.erase(lru_.back().client);
      lru_.pop_back();
    }
    lru_.push_front(
        Bucket{std::string(client), TokenBucketState(options_.qps, options_.burst, now)});
    index_.emplace(lru_.front().client, lru_.begin());
    bucket = &lru_.front();
  }
  if (bucket->state.TryTake()) return true;
  if (retry_after != nullptr) {
    // Whole seconds, at least 1, at most a day ("much later" enough).
    const double wait =
        std::min(std::chrono::duration<double>(bucket->state.TimeUntilToken()).count(), 86400.0);
    *retry_after =
        std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait))));
  }
  return false;
}

size_t ClientRateLimiter::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace sluice::apiserver
