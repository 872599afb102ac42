#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace sluice::kube {

ItemExponentialRateLimiter::ItemExponentialRateLimiter(Clock::Duration base, Clock::Duration max)
    : base_(base), max_(max) {}

Clock::Duration ItemExponentialRateLimiter::When(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  const int exp = failures_[item]++;
  // Computed in floating point so a large exponent saturates instead of overflowing.
  const double delay = static_cast<double>(base_.count()) * std::pow(2.0, exp);
  if (delay >= static_cast<double>(max_.count())) return max_;
  return Clock::Duration(static_cast<Clock::Duration::rep>(delay));
}

void ItemExponentialRateLimiter::Forget(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(item);
}

int ItemExponentialRateLimiter::NumRequeues(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

Clock::Duration MaxOfRateLimiter::When(const std::string& item) {
  Clock::Duration out = Clock::Duration::zero();
  for (auto& l : limiters_) out = std::max(out, l->When(item));
  return out;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int out = 0;
  for (auto& l : limiters_) out = std::max(out, l->NumRequeues(item));
  return out;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                                  std::chrono::seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace sluice::kube
