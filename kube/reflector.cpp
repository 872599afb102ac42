#include "kube/reflector.h"

#include <random>

#include "kube/errors.h"

namespace sluice::kube {

Reflector::Reflector(ResourceClient resource, ReflectorOptions options, ReflectorSink& sink)
    : resource_(resource),
      options_(options),
      sink_(sink),
      watcher_(resource, options.selectors, options.watch) {}

Status Reflector::Run(CancellationToken cancel) {
  std::mt19937_64 rng{std::random_device{}()};
  int failures = 0;
  while (!cancel.IsCancelled()) {
    ListOptions list = options_.selectors;
    list.limit = options_.page_size;
    list.continue_token.clear();
    list.resource_version.clear();
    ++lists_;
    Result<ObjectList> objects = resource_.ListAll(list);
    Status s;
    if (objects.ok()) {
      failures = 0;
      sink_.Replace(objects->items, objects->resource_version);
      s = watcher_.Run(
          objects->resource_version, [this](const WatchEvent& e) { sink_.Apply(e); }, cancel);
      if (IsGone(s)) continue;  // Too old: list again at once.
    } else {
      s = objects.status();
    }
    if (cancel.IsCancelled()) break;
    const auto delay = http::BackoffDelay(options_.relist_backoff, failures++,
                                          std::uniform_real_distribution<double>(0, 1)(rng));
    if (cancel.WaitFor(delay)) break;
  }
  return Status::Cancelled("reflector stopped");
}

}  // namespace sluice::kube
