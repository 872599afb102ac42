#include "localcluster/apiserver/watch_start.h"

namespace sluice::apiserver {
namespace {

// A resource version the server handed out: decimal digits.
bool ParseRevisionText(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::variant<WatchStart, openapi::FieldErrors> DecideWatchStart(const WatchQuery& query) {
  openapi::FieldErrors errors;
  uint64_t revision = 0;
  const bool has_revision = !query.resource_version.empty();
  if (has_revision && !ParseRevisionText(query.resource_version, &revision)) {
    errors.push_back({"resourceVersion", "Invalid value: \"" + query.resource_version +
                                             "\": must be a resource version returned by the "
                                             "server"});
  }
  const std::string& send = query.send_initial_events;
  if (!send.empty() && send != "true" && send != "false") {
    errors.push_back(
        {"sendInitialEvents", "Invalid value: \"" + send + "\": must be true or false"});
  }
  if (!send.empty()) {
    // kube's validation of a streaming watch: both are required so the client can tell where
    // the initial state ends.
    if (query.resource_version_match != "NotOlderThan") {
      errors.push_back({"resourceVersionMatch",
                        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                        "NotOlderThan"});
    }
    if (!query.allow_watch_bookmarks) {
      errors.push_back({"allowWatchBookmarks",
                        "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to "
                        "true"});
    }
  } else if (!query.resource_version_match.empty()) {
    errors.push_back({"resourceVersionMatch",
                      "Forbidden: resourceVersionMatch is forbidden for watch unless "
                      "sendInitialEvents is provided"});
  }
  if (!errors.empty()) return errors;

  WatchStart start;
  if (send == "true") {
    // The current state serves "" (a consistent read), "0" (any state) and NotOlderThan N
    // alike, as long as it is at least at N (the caller checks).
    start.initial_state = true;
    start.initial_events_end = true;
    start.not_older_than = revision;
  } else if (send == "false") {
    start.from = revision;  // "" and "0" both mean: from now, no initial state.
  } else if (!has_revision || revision == 0) {
    start.initial_state = true;
  } else {
    start.from = revision;
  }
  return start;
}

}  // namespace sluice::apiserver
