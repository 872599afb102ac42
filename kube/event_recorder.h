// EventRecorder: core/v1 Events about the objects the operator manages ("Scaled up to 3",
// "Invalid spec"), written so a crash loop cannot flood the API server.
//
// - Aggregation: an event identical to an earlier one (same involved object, type, reason,
//   message and component) is not created again; the existing Event's `count` is incremented
//   and its `lastTimestamp` moved (a merge patch), as kubectl describe shows ("x12 over 5m").
//   The cache of recent events is bounded (LRU by first use); if the Event has been deleted
//   meanwhile, a new one is created.
// - Rate limit: per involved object a token bucket (client-go's spam filter: burst 25, one more
//   every 5 minutes). Events over the limit are dropped and Record returns TooManyRequests.
// - Event names are "<object name>.<hex wall-clock nanoseconds>", like client-go's.
//
// Events are written synchronously by the calling thread; reconcilers call Record at most a
// few times per reconcile. Errors are returned for logging; callers never fail a reconcile on
// them.
//
// Ownership: the RestClient behind `client` and the Clock must outlive the recorder.
// Thread safety: every method may be called from any thread.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/token_bucket.h"

namespace sluice::kube {

inline constexpr char kEventNormal[] = "Normal";
inline constexpr char kEventWarning[] = "Warning";

struct EventRecorderOptions {
  std::string component = "sluice-operator";  // source.component and reportingComponent.
  std::string host;                           // source.host (the pod name); may be empty.
  double refill_per_second = 1.0 / 300.0;     // Per involved object.
  int burst = 25;
  size_t cache_size = 4096;  // Distinct events remembered for aggregation.
  Clock* clock = nullptr;    // Null: the system clock.
};

class EventRecorder {
 public:
  EventRecorder(DynamicClient& client, EventRecorderOptions options = {});

  // Records an event about `involved` (any object with apiVersion, kind, metadata.name,
  // namespace, uid, resourceVersion). `type` is kEventNormal or kEventWarning; `reason` is
  // UpperCamelCase ("ScaledUp"). Returns the error of the write, or TooManyRequests when the
  // event was dropped by the rate limit.
  Status Record(const nlohmann::json& involved, const std::string& type, const std::string& reason,
                const std::string& message);

  // Events dropped by the rate limit so far.
  int dropped() const;

 private:
  struct Cached {
    std::string namespace_;
    std::string name;  // Of the Event object.
    int64_t count = 0;
    std::list<std::string>::iterator lru;
  };

  DynamicClient& client_;
  EventRecorderOptions options_;
  Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Cached> cache_;
  std::list<std::string> lru_;  // Oldest first.
  std::map<std::string, std::unique_ptr<TokenBucket>> limits_;
  int dropped_ = 0;
};

}  // namespace sluice::kube
