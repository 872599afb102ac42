// Watcher: a long-running watch of one resource (and namespace, label/field selectors) from a
// resourceVersion, kept alive across server timeouts and dropped connections.
//
// Each watch request asks for `timeoutSeconds` drawn from [timeout, 2 * timeout) (so a fleet of
// watches does not reconnect in step) and for bookmarks. When the server ends the stream, the
// connection drops, or nothing arrives for the stall timeout (RestClientOptions), the watch is
// re-opened from the last resourceVersion seen (of an event or a bookmark) after a jittered
// exponential backoff (reset by every event received). It stops and returns:
//   Gone       the server no longer has that resourceVersion (410, or an ERROR event with
//              code 410): the caller must list again (the reflector does).
//   Cancelled  `cancel` fired.
//   other      Unauthorized, Forbidden, NotFound, BadRequest: retrying the same request cannot
//              help; the caller backs off and lists again.
//
// Ownership: holds a ResourceClient (a reference to the RestClient, which must outlive it).
// Thread safety: one Run at a time; last_resource_version() from any thread.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "common/http/backoff.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/watch_decoder.h"

namespace sluice::kube {

struct WatcherOptions {
  int timeout_seconds = 300;  // Server-side timeout per request, before jitter (client-go: 5 min).
  bool allow_bookmarks = true;
  http::BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::milliseconds(30000), 2.0,
                              1.0};
};

class Watcher {
 public:
  // `selectors`: label and field selectors (other fields are ignored).
  Watcher(ResourceClient resource, ListOptions selectors, WatcherOptions options = {});

  // Watches from `resource_version`, calling `on_event` for ADDED, MODIFIED, DELETED and
  // BOOKMARK events in order. See the header comment for when it returns.
  Status Run(const std::string& resource_version,
             const std::function<void(const WatchEvent&)>& on_event, CancellationToken cancel);

  std::string last_resource_version() const;
  // Watch requests sent so far (for tests and metrics).
  int requests() const;

 private:
  ResourceClient resource_;
  ListOptions selectors_;
  WatcherOptions options_;
  mutable std::mutex mu_;
  std::string last_rv_;
  int requests_ = 0;
};

}  // namespace sluice::kube
