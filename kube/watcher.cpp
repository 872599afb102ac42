#include "kube/watcher.h"

#include <random>

#include "kube/errors.h"

namespace sluice::kube {
namespace {

double WatchBackoffJitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

Watcher::Watcher(ResourceClient resource, ListOptions selectors, WatcherOptions options)
    : resource_(std::move(resource)), selectors_(std::move(selectors)), options_(options) {}

std::string Watcher::last_resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rv_;
}

int Watcher::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

Status Watcher::Run(const std::string& resource_version,
                    const std::function<void(const WatchEvent&)>& on_event,
                    CancellationToken cancel) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_rv_ = resource_version;
  }
  int failures = 0;
  while (!cancel.IsCancelled()) {
    ListOptions opts;
    opts.label_selector = selectors_.label_selector;
    opts.field_selector = selectors_.field_selector;
    opts.resource_version = last_resource_version();
    opts.allow_watch_bookmarks = options_.allow_bookmarks;
    if (options_.timeout_seconds > 0) {
      opts.timeout_seconds = options_.timeout_seconds +
                             static_cast<int>(options_.timeout_seconds * WatchBackoffJitter());
    }
    RestRequest req;
    req.path = ResourcePath(resource_.gvr(), resource_.namespace_());
    req.query = opts.ToQuery(true);
    req.cancel = cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
    }
    WatchDecoder decoder;
    Status event_error;
    bool got_event = false;
    Status s = resource_.rest().Stream(req, [&](std::string_view chunk) {
      Status fed = decoder.Feed(chunk, [&](WatchEvent event) {
        if (event.type == WatchEventType::kError) {
          event_error = event.ErrorStatus();
          return false;
        }
        got_event = true;
        const std::string rv = event.ResourceVersion();
        on_event(event);
        if (!rv.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          last_rv_ = rv;
        }
        return true;
      });
      if (!fed.ok()) event_error = fed;
      return fed.ok() && event_error.ok();
    });
    if (cancel.IsCancelled()) return Status::Cancelled("watch cancelled");
    if (!event_error.ok()) s = event_error;
    if (IsGone(s)) return s;
    if (s.code() == StatusCode::kUnauthenticated || s.code() == StatusCode::kPermissionDenied ||
        s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument) {
      return s;
    }
    if (got_event) failures = 0;
    if (s.ok() && got_event) continue;  // The server's timeout ended a healthy watch.
    const auto delay = http::BackoffDelay(options_.backoff, failures++, WatchBackoffJitter());
    if (cancel.WaitFor(delay)) break;
  }
  return Status::Cancelled("watch cancelled");
}

}  // namespace sluice::kube
