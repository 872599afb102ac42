// ApiServer's watch: the initial state as ADDED events (no resourceVersion, or
// sendInitialEvents=true with its closing bookmark; watch_start.h), then the storage's changes,
// translated for label and field selectors, with bookmarks, timeouts and Table output, streamed to
// the client as chunked JSON lines.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/field_selector.h"
#include "localcluster/apiserver/label_selector.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/table.h"
#include "localcluster/apiserver/watch_quota.h"
#include "localcluster/apiserver/watch_start.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::DisableCompression;
using api_server_internal::IncludeFrom;
using api_server_internal::kWatchInitialPage;
using api_server_internal::Param;
using api_server_internal::ParseRevision;
using api_server_internal::ParseSelectors;
using api_server_internal::ResourceVersionOf;
using api_server_internal::SelectableFields;
using api_server_internal::Selectors;
using api_server_internal::TableFor;
using api_server_internal::TruthyParam;
using nlohmann::json;

constexpr std::chrono::milliseconds kWatchPoll{1000};

// One open watch stream; shared with httplib's content provider, which must be copyable.
struct WatchStream {
  std::unique_ptr<Watcher> watcher;
  std::vector<json> initial;  // Synthetic ADDED events of the state the watch starts from.
  size_t next_initial = 0;
  // The revision of that state, for the BOOKMARK that ends it (sendInitialEvents=true).
  std::optional<uint64_t> initial_events_end;
  LabelSelector labels;
  FieldSelector fields;
  ResourceInfo resource;
  std::optional<json> crd;
  bool table = false;
  IncludeObject include = IncludeObject::kMetadata;
  bool bookmarks = false;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point next_bookmark;
  std::chrono::seconds bookmark_interval{30};
  CancellationToken shutdown;
  Clock* clock = nullptr;
  metrics::Gauge* gauge = nullptr;
  WatchQuota::Slot slot;  // This watch's place in its identity's quota, given back with it.
  bool finished = false;

  ~WatchStream() {
    if (gauge != nullptr) gauge->Dec();
  }

  bool Selects(const nlohmann::json& object) const {
    return labels.MatchesObject(object) && fields.Matches(object);
  }

  // The event type this watch sends for `e`, "" for none. With selectors, as kube's watch
  // cache does: an update that brings an object into the selection is ADDED, one that takes it
  // out is DELETED (carrying the new state), one outside it before and after is not sent.
  std::string_view Translate(const WatchEvent& e) const {
    const bool now = Selects(*e.object);
    if (e.type != WatchEventType::kModified || e.prev_object == nullptr) {
      return now ? WatchEventTypeName(e.type) : std::string_view();
    }
    const bool before = Selects(*e.prev_object);
    if (now && before) return "MODIFIED";
    if (now) return "ADDED";
    if (before) return "DELETED";
    return {};
  }

  // The wire line of a BOOKMARK at `revision`: an object of the watched kind with only its
  // resourceVersion (and the end-of-initial-events annotation when it ends the initial state).
  std::string Bookmark(uint64_t revision, bool ends_initial_events) const {
    json metadata = {{"resourceVersion", std::to_string(revision)}};
    if (ends_initial_events) {
      metadata["annotations"] = {{kInitialEventsEndAnnotation, "true"}};
    }
    const json line = {{"type", "BOOKMARK"},
                       {"object",
                        {{"apiVersion", resource.ApiVersion()},
                         {"kind", resource.kind},
                         {"metadata", std::move(metadata)}}}};
    return line.dump() + "\n";
  }

  // The wire line of one event.
  std::string Line(std::string_view type, const json& object) const {
    json out_object = ForOutput(resource, object);
    if (table) {
      Result<json> t = TableFor(resource, crd, {out_object}, clock->WallNow(),
                                ResourceVersionOf(object), include);
      if (t.ok()) out_object = std::move(*t);
    }
    return json{{"type", type}, {"object", std::move(out_object)}}.dump() + "\n";
  }
};

}  // namespace

void ApiServer::Watch(Request& r, httplib::Response& res) {
  Result<Selectors> selectors = ParseSelectors(r.http, r.resource);
  if (!selectors.ok()) {
    ReplyStatus(selectors.status(), &r, res);
    return;
  }
  auto& [labels, fields] = *selectors;
  std::optional<std::string> ns;
  if (r.resource.namespaced && !r.info.namespace_.empty()) ns = r.info.namespace_;
  if (!r.info.name.empty()) {
    // GET .../pods/x?watch=1 (the deprecated single-object watch): select the name.
    Result<FieldSelector> by_name =
        ParseFieldSelector("metadata.name=" + EscapeFieldValue(r.info.name) +
                               (fields.Empty() ? "" : "," + fields.ToString()),
                           SelectableFields(r.resource));
    if (by_name.ok()) fields = std::move(*by_name);
  }
  auto stream = std::make_shared<WatchStream>();
  stream->slot = watch_quota_->TryAcquire(LimitKey(r.user.name, r.http.remote_addr));
  if (!stream->slot.held()) {
    // As kube's priority and fairness answers a client over its share: retry in a second.
    res.set_header("Retry-After", "1");
    const json body =
        StatusJson(429, "TooManyRequests",
                   "too many open watches for user \"" + r.user.name + "\" (at most " +
                       std::to_string(watch_quota_->per_identity()) + "); please try again later");
    res.status = 429;
    res.set_content(body.dump(), "application/json");
    return;
  }
  const std::string rv_param = Param(r.http, "resourceVersion");
  if (Result<uint64_t> parsed = ParseRevision(rv_param, "resourceVersion"); !parsed.ok()) {
    ReplyStatus(parsed.status(), &r, res);
    return;
  }
  const auto decided = DecideWatchStart({rv_param, Param(r.http, "resourceVersionMatch"),
                                         Param(r.http, "sendInitialEvents"),
                                         TruthyParam(r.http, "allowWatchBookmarks")});
  if (const auto* errors = std::get_if<openapi::FieldErrors>(&decided)) {
    const json body =
        InvalidStatusJson("ListOptions.meta.k8s.io", "", "meta.k8s.io", "ListOptions", *errors);
    res.status = CodeOf(body);
    res.set_content(body.dump(), "application/json");
    return;
  }
  const WatchStart& start = std::get<WatchStart>(decided);
  uint64_t from = start.from;
  if (start.initial_state) {
    std::string token;
    bool first = true;
    do {
      Result<ListResult> page = storage_->List(r.key.resource, ns, kWatchInitialPage, token);
      if (!page.ok()) {
        ReplyStatus(page.status(), &r, res);
        return;
      }
      if (first) from = page->revision;
      first = false;
      for (Stored& s : page->items) {
        if (labels.MatchesObject(s.object) && fields.Matches(s.object)) {
          stream->initial.push_back(std::move(s.object));
        }
      }
      token = page->continue_token;
    } while (!token.empty());
    if (from < start.not_older_than) {
      // kube answers a NotOlderThan newer than anything it has with 504 after a wait; here the
      // storage is the source of truth, so no newer state can come.
      const json body = StatusJson(
          504, "Timeout",
          "Too large resource version: " + rv_param + ", current: " + std::to_string(from));
      res.status = 504;
      res.set_content(body.dump(), "application/json");
      return;
    }
    if (start.initial_events_end) stream->initial_events_end = from;
  }
  Result<std::unique_ptr<Watcher>> watcher = storage_->Watch(r.key.resource, ns, from);
  if (!watcher.ok()) {
    ReplyStatus(watcher.status(), &r, res);
    return;
  }
  stream->watcher = std::move(*watcher);
  stream->labels = std::move(labels);
  stream->fields = std::move(fields);
  stream->resource = r.resource;
  stream->crd = r.crd;
  stream->table = r.table;
  stream->include = IncludeFrom(r.http);
  stream->bookmarks = TruthyParam(r.http, "allowWatchBookmarks");
  stream->bookmark_interval = options_.bookmark_interval;
  stream->clock = clock_;
  stream->shutdown = http_->shutdown_token();
  auto duration = options_.max_watch_duration;
  if (const std::string t = Param(r.http, "timeoutSeconds"); !t.empty()) {
    Result<uint64_t> secs = ParseRevision(t, "timeoutSeconds");
    if (!secs.ok()) {
      ReplyStatus(Status::InvalidArgument("timeoutSeconds: Invalid value: \"" + t + "\""), &r, res);
      return;
    }
    // As in kube, 0 means no timeout of the client's own (the server's limit applies).
    if (*secs > 0) {
      duration = std::min<std::chrono::seconds>(duration, std::chrono::seconds(*secs));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  stream->deadline = now + duration;
  stream->next_bookmark = now + stream->bookmark_interval;
  if (watches_ != nullptr) {
    watches_->Inc();
    stream->gauge = watches_;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache, private");
  DisableCompression(r.http);
  res.set_chunked_content_provider(
      r.table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : "application/json;stream=watch",
      [stream](size_t, httplib::DataSink& sink) -> bool {
        WatchStream& w = *stream;
        if (w.finished) {
          sink.done();
          return true;
        }
        if (!sink.is_writable()) return false;
        if (w.next_initial < w.initial.size()) {
          std::string chunk;
          for (size_t n = 0; n < 100 && w.next_initial < w.initial.size(); ++n) {
            chunk += w.Line("ADDED", w.initial[w.next_initial]);
            w.initial[w.next_initial++] = json();
          }
          if (w.next_initial == w.initial.size()) w.initial.clear();
          return sink.write(chunk.data(), chunk.size());
        }
        if (w.initial_events_end) {
          const std::string line = w.Bookmark(*w.initial_events_end, /*initial_events_end=*/true);
          w.initial_events_end.reset();
          return sink.write(line.data(), line.size());
        }
        auto now = std::chrono::steady_clock::now();
        if (now >= w.deadline || w.shutdown.IsCancelled()) {
          w.finished = true;
          w.watcher->Stop();
          sink.done();
          return true;
        }
        auto wait = std::min<std::chrono::steady_clock::duration>(kWatchPoll, w.deadline - now);
        if (w.bookmarks)
          wait = std::min(wait,
                          std::max<std::chrono::steady_clock::duration>(w.next_bookmark - now, {}));
        WatchNext next = w.watcher->Next(wait, w.shutdown);
        switch (next.kind) {
          case WatchNext::Kind::kEvent: {
            const WatchEvent& e = *next.event;
            const std::string_view type = w.Translate(e);
            if (type.empty()) return true;
            const std::string line = w.Line(type, *e.object);
            return sink.write(line.data(), line.size());
          }
          case WatchNext::Kind::kTimeout: {
            now = std::chrono::steady_clock::now();
            if (w.bookmarks && now >= w.next_bookmark) {
              w.next_bookmark = now + w.bookmark_interval;
              const std::string line = w.Bookmark(w.watcher->BookmarkRevision(), false);
              return sink.write(line.data(), line.size());
            }
            return true;
          }
          case WatchNext::Kind::kCancelled:
            w.finished = true;
            w.watcher->Stop();
            sink.done();
            return true;
          case WatchNext::Kind::kClosed: {
            // kube reports a watch that cannot go on as an ERROR event carrying a Status.
            const json status = StatusJson(next.status);
            const std::string line = json{{"type", "ERROR"}, {"object", status}}.dump() + "\n";
            w.finished = true;
            sink.write(line.data(), line.size());
            sink.done();
            return true;
          }
        }
        return true;
      });
}

}  // namespace sluice::apiserver
