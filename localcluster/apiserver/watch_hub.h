// WatchHub: the watch machinery shared by the Storage implementations. It keeps a bounded ring
// of the latest events (the history that watches may resume from) and fans each new event out to
// the registered watchers.
//
// The storage publishes every committed write, in commit order, while still holding its own
// write lock, so the hub sees revisions strictly increasing and a watch registered between two
// writes misses nothing. The hub starts with empty history at `current_revision`: a watch from an
// earlier revision is Gone, as is one whose events have since left the ring.
//
// Memory: history_capacity events (shared, never copied per watcher) plus, per watcher, at most
// watcher_queue_capacity pending pointers to them. Replays read the ring in place.
//
// Ownership: the storage owns the hub; watchers share its internal state, so a Watcher may
// outlive the hub (it is closed with Unavailable when the hub is destroyed).
//
// Thread safety: every method may be called from any thread; one mutex guards the ring and all
// watcher state, and Publish never blocks on a consumer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

struct WatchHubOptions {
  // Events kept for watches that resume from a past revision (kube's watch cache keeps a window
  // like this; etcd's is its compaction interval). At least 1.
  size_t history_capacity = 10000;
  // Live events one watcher may have waiting before it is closed as too slow. At least 1.
  size_t watcher_queue_capacity = 1000;
};

class WatchHub {
 public:
  // `current_revision`: the storage's revision now; watches may start from it or later.
  WatchHub(const WatchHubOptions& options, uint64_t current_revision);
  // Starts with `history` already in the ring (a persistent storage's recent events, reloaded
  // after a restart): its revisions must be consecutive and end at `current_revision` (checked);
  // watches may then resume from just before its first event. Only the newest
  // history_capacity events are kept.
  WatchHub(const WatchHubOptions& options, uint64_t current_revision,
           std::vector<WatchEventPtr> history);
  // Closes every watcher with Unavailable("storage closed").
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Records a committed write and hands it to matching watchers. event->revision must exceed
  // every revision published before (checked).
  void Publish(WatchEventPtr event);

  // See Storage::Watch.
  Result<std::unique_ptr<Watcher>> Watch(const std::string& resource,
                                         const std::optional<std::string>& ns,
                                         uint64_t from_revision);

  // The latest published revision (the start revision before any).
  uint64_t CurrentRevision() const;
  // The oldest revision a watch may start from: events after it are all still in the ring.
  uint64_t OldestWatchableRevision() const;
  // Watchers registered and not closed.
  size_t WatcherCount() const;

  struct Core;  // Shared with watchers; defined in watch_hub.cpp.

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace sluice::apiserver
