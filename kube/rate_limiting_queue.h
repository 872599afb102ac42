// RateLimitingQueue: a DelayingQueue whose retries are paced by a RateLimiter, like client-go's
// rate_limiting_queue. The reconcile loop:
//
//   while (auto key = q.Get()) {
//     Status s = Reconcile(*key);
//     if (s.ok()) q.Forget(*key); else q.AddRateLimited(*key);
//     q.Done(*key);
//   }
//
// Ownership: owns its limiter. Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "kube/delaying_queue.h"
#include "kube/rate_limiter.h"

namespace sluice::kube {

class RateLimitingQueue : public DelayingQueue {
 public:
  // `limiter` null: DefaultControllerRateLimiter on the queue's clock.
  explicit RateLimitingQueue(DelayingQueueOptions options = {},
                             std::unique_ptr<RateLimiter> limiter = nullptr);

  // AddAfter(item, limiter.When(item)); counts a retry.
  void AddRateLimited(const std::string& item);
  // The item succeeded: its backoff starts over. It does not remove the item from the queue.
  void Forget(const std::string& item);
  int NumRequeues(const std::string& item);

 private:
  std::unique_ptr<RateLimiter> limiter_;
};

}  // namespace sluice::kube
