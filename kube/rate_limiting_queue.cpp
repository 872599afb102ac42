#include "kube/rate_limiting_queue.h"

namespace sluice::kube {

RateLimitingQueue::RateLimitingQueue(DelayingQueueOptions options,
                                     std::unique_ptr<RateLimiter> limiter)
    : DelayingQueue(std::move(options)),
      limiter_(limiter ? std::move(limiter) : DefaultControllerRateLimiter(clock())) {}

void RateLimitingQueue::AddRateLimited(const std::string& item) {
  CountRetry();
  AddAfter(item, limiter_->When(item));
}

void RateLimitingQueue::Forget(const std::string& item) { limiter_->Forget(item); }

int RateLimitingQueue::NumRequeues(const std::string& item) { return limiter_->NumRequeues(item); }

}  // namespace sluice::kube
