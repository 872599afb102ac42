// ClientRateLimiter: a token bucket per client (the API server keys it by user, else by peer
// address), so that one runaway client gets 429s instead of starving the others.
//
// Each client's bucket holds at most `burst` tokens and refills at `qps` tokens per second of
// the clock's monotonic time; a request takes one token. A client seen for the first time
// starts with a full bucket. Memory is bounded: at most `max_clients` buckets are kept, and the
// least recently seen client is forgotten when a new one would exceed that (it starts full
// again if it returns, which only ever favours it).
//
// Ownership: `clock` is not owned and must outlive the limiter.
// Thread safety: Allow may be called from any thread; one mutex guards all buckets.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "common/token_bucket_state.h"

namespace sluice::apiserver {

class ClientRateLimiter {
 public:
  struct Options {
    double qps = 50;     // Sustained requests per second per client; <= 0 disables limiting.
    double burst = 100;  // Requests a rested client may make at once; below 1 counts as 1.
    size_t max_clients = 10000;  // Buckets kept; 0 counts as 1.
  };

  ClientRateLimiter(Options options, Clock* clock);
  ClientRateLimiter(const ClientRateLimiter&) = delete;
  ClientRateLimiter& operator=(const ClientRateLimiter&) = delete;

  // Takes a token from `client`'s bucket: true when the request may proceed. When it may not,
  // and `retry_after` is not null, sets it to the whole seconds (at least 1) until a token will
  // be available, for a Retry-After header.
  bool Allow(std::string_view client, std::chrono::seconds* retry_after);

  // Buckets currently kept (at most max_clients).
  size_t tracked_clients() const;

 private:
  struct Bucket {
    std::string client;
    TokenBucketState state;
  };
  // Most recently seen first.
  using Lru = std::list<Bucket>;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  const Options options_;
  Clock* const clock_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator, Hash, std::equal_to<>> index_;
};

}  // namespace sluice::apiserver
