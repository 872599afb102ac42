// Rate limiters for the workqueue: how long to wait before an item is retried, like client-go's
// default_rate_limiters.go. A limiter is When (records one more failure of the item and returns
// the delay before its retry), Forget (the item succeeded: clear its history) and NumRequeues.
//
//   ItemExponentialRateLimiter  base * 2^failures, capped: 5 ms, 10 ms, ... 1000 s by default.
//   BucketRateLimiter           an overall token bucket (10 qps, burst 100 by default), so a
//                               storm of failures cannot turn into a storm of retries.
//   MaxOfRateLimiter            the longest delay of several limiters.
//   DefaultControllerRateLimiter()  MaxOf(ItemExponential(5 ms, 1000 s), Bucket(10, 100)).
//
// Thread safety: every method may be called from any thread. Clocks must outlive limiters.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "kube/token_bucket.h"

namespace sluice::kube {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Records a failure of `item` and returns how long to wait before retrying it.
  virtual Clock::Duration When(const std::string& item) = 0;
  // Clears the failure history of `item`.
  virtual void Forget(const std::string& item) = 0;
  // Failures recorded for `item` since the last Forget.
  virtual int NumRequeues(const std::string& item) = 0;
};

class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  ItemExponentialRateLimiter(Clock::Duration base = std::chrono::milliseconds(5),
                             Clock::Duration max = std::chrono::seconds(1000));
  Clock::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const Clock::Duration base_, max_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;
};

class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock& clock) : bucket_(qps, burst, clock) {}
  Clock::Duration When(const std::string&) override { return bucket_.Reserve(); }
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
};

class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  Clock::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock& clock);

}  // namespace sluice::kube
