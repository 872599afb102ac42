// Where a watch starts, decided from its query parameters as kube-apiserver does for
// ListOptions with watch=true, including the streaming list ("watch-list", KEP-3157) that
// client-go's reflectors use from Kubernetes 1.35 on: sendInitialEvents=true asks for the current
// state as ADDED events followed by one BOOKMARK annotated `k8s.io/initial-events-end: "true"`,
// after which the client treats its cache as synced. A server that ignored the parameter would
// leave such a client waiting for that bookmark forever (kubectl 1.35's `wait` hangs).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "common/openapi/field_error.h"

namespace sluice::apiserver {

// The watch-related query parameters, as sent ("" when absent).
struct WatchQuery {
  std::string resource_version;
  std::string resource_version_match;
  std::string send_initial_events;  // "true", "false" or "" (not sent).
  bool allow_watch_bookmarks = false;
};

struct WatchStart {
  // Send the current state (at the revision the watch starts from) as ADDED events first.
  bool initial_state = false;
  // After the initial state, send a BOOKMARK at that revision annotated
  // k8s.io/initial-events-end (only for sendInitialEvents=true).
  bool initial_events_end = false;
  // When !initial_state: send changes after this revision; 0 means from the current revision.
  uint64_t from = 0;
  // When initial_state: the state sent must be at least this new (resourceVersionMatch
  // NotOlderThan); 0 for any.
  uint64_t not_older_than = 0;
  friend bool operator==(const WatchStart&, const WatchStart&) = default;
};

// The annotation on the bookmark that ends a watch's initial events.
inline constexpr const char* kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

// The start of a watch, or the field errors kube reports for these parameters (answered as
// 422 Invalid for kind ListOptions). Without sendInitialEvents, kube's legacy semantics: no
// resourceVersion or "0" sends the current state first, a revision N sends changes after N.
std::variant<WatchStart, openapi::FieldErrors> DecideWatchStart(const WatchQuery& query);

}  // namespace sluice::apiserver
