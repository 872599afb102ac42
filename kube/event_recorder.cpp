#include "kube/event_recorder.h"

#include <cstdio>

#include "common/time_format.h"
#include "kube/core_resources.h"
#include "kube/errors.h"
#include "kube/store.h"

namespace sluice::kube {

EventRecorder::EventRecorder(DynamicClient& client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)), clock_(ClockOrSystem(options_.clock)) {}

int EventRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

Status EventRecorder::Record(const nlohmann::json& involved, const std::string& type,
                             const std::string& reason, const std::string& message) {
  const std::string ns = NamespaceOf(involved).empty() ? "default" : NamespaceOf(involved);
  const std::string obj_name = NameOf(involved);
  if (obj_name.empty()) return Status::InvalidArgument("the involved object has no name");
  const nlohmann::json ref = {{"apiVersion", involved.value("apiVersion", "")},
                              {"kind", involved.value("kind", "")},
                              {"namespace", NamespaceOf(involved)},
                              {"name", obj_name},
                              {"uid", UidOf(involved)},
                              {"resourceVersion", ResourceVersionOf(involved)}};
  const std::string object_key =
      ref.value("kind", "") + "/" + ns + "/" + obj_name + "/" + UidOf(involved);
  const std::string key =
      object_key + "\x1f" + type + "\x1f" + reason + "\x1f" + message + "\x1f" + options_.component;
  const std::string now = FormatTime(clock_.WallNow());

  std::optional<Cached> cached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& bucket = limits_[object_key];
    if (!bucket) {
      bucket = std::make_unique<TokenBucket>(options_.refill_per_second, options_.burst, clock_);
    }
    if (!bucket->TryAccept()) {
      ++dropped_;
      return Status::TooManyRequests("event " + reason + " about " + obj_name +
                                     " dropped by the rate limit");
    }
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++it->second.count;
      cached = it->second;
    }
  }
  ResourceClient events = Events(client_, ns);
  if (cached) {
    const nlohmann::json patch = {{"count", cached->count}, {"lastTimestamp", now}};
    Result<nlohmann::json> r = events.Patch(cached->name, PatchType::kMerge, patch.dump());
    if (r.ok()) return Status::Ok();
    if (!IsNotFound(r.status())) return r.status();
    // Deleted meanwhile (Events expire): create it afresh below.
  }
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%llx",
                static_cast<unsigned long long>(clock_.WallNow().time_since_epoch().count()));
  const std::string name = obj_name + "." + suffix;
  const nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"involvedObject", ref},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"source", options_.host.empty()
                     ? nlohmann::json{{"component", options_.component}}
                     : nlohmann::json{{"component", options_.component}, {"host", options_.host}}},
      {"reportingComponent", options_.component},
      {"reportingInstance", options_.host}};
  Result<nlohmann::json> created = events.Create(event);
  if (!created.ok()) return created.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    it->second.name = name;
    it->second.count = 1;
    return Status::Ok();
  }
  lru_.push_back(key);
  cache_[key] = Cached{ns, name, 1, std::prev(lru_.end())};
  while (cache_.size() > options_.cache_size) {
    cache_.erase(lru_.front());
    lru_.pop_front();
  }
  return Status::Ok();
}

}  // namespace sluice::kube
