// Reflector: keeps a sink in step with the server for one resource, namespace and selector:
// list (paged), hand the full list to the sink, then watch from the list's resourceVersion and
// hand it every event, like client-go's Reflector.ListAndWatch.
//
// On 410 Gone (the watch's resourceVersion was compacted away) it lists again at once. On other
// list or watch failures it waits (jittered exponential backoff, reset after a successful list)
// and lists again. Dropped connections and server timeouts are handled inside the Watcher,
// which resumes from the last resourceVersion without a list.
//
// Ownership: the sink and the RestClient behind `resource` must outlive the reflector.
// Thread safety: Run on one thread; the counters from any thread.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/http/backoff.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/store.h"
#include "kube/watch_decoder.h"
#include "kube/watcher.h"

namespace sluice::kube {

// Receives what the reflector learns. Called from the reflector's thread only, in order.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The full current content, after each (re)list.
  virtual void Replace(const std::vector<ObjectPtr>& objects,
                       const std::string& resource_version) = 0;
  // One ADDED, MODIFIED, DELETED or BOOKMARK event.
  virtual void Apply(const WatchEvent& event) = 0;
};

struct ReflectorOptions {
  ListOptions selectors;  // Label and field selectors.
  int64_t page_size = 500;
  WatcherOptions watch;
  http::BackoffPolicy relist_backoff{std::chrono::milliseconds(800),
                                     std::chrono::milliseconds(30000), 2.0, 1.0};
};

class Reflector {
 public:
  Reflector(ResourceClient resource, ReflectorOptions options, ReflectorSink& sink);

  // Lists and watches until `cancel` fires. Returns Cancelled.
  Status Run(CancellationToken cancel);

  int lists() const { return lists_.load(); }
  int watch_requests() const { return watcher_.requests(); }
  std::string last_resource_version() const { return watcher_.last_resource_version(); }

 private:
  ResourceClient resource_;
  ReflectorOptions options_;
  ReflectorSink& sink_;
  Watcher watcher_;
  std::atomic<int> lists_{0};
};

}  // namespace sluice::kube
