// Storage: the object store under every API server handler, and the watch stream of its changes.
//
// Objects are JSON documents (nlohmann::json) filed under an ObjectKey: the resource key
// ("core/pods", "sluice.dev/rolloutpools"), the namespace ("" for cluster-scoped resources) and
// the name. One global revision counter, persisted and strictly increasing like etcd's, numbers
// every write (create, update, delete) across all resources; a stored object's
// metadata.resourceVersion is the revision of its last write, as a decimal string. Storage owns
// only bytes and revisions: defaulting, validation, generation, uid, finalizers and the rest of
// the Kubernetes semantics belong to the handlers above it.
//
// Errors (kube's HTTP mapping in parentheses): NotFound (404) for a missing object,
// AlreadyExists (409) on a create over an existing one, Conflict (409) when an expected revision
// does not match, Gone (410) for a watch from a revision older than the kept history,
// InvalidArgument (400) for an empty key, a non-object document or a bad continue token,
// Internal/Corruption (500) for backend failures (the message carries the backend's own words).
// Messages use kube's wording (`pods "x" not found`) so handlers can pass them through.
//
// Implementations: SqliteStorage (persistent, sqlite_storage.h) and MemoryStorage (for tests of
// other parts, memory_storage.h). Both share WatchHub (watch_hub.h) for watch history and
// fan-out, so they behave identically apart from persistence.
//
// Thread safety: every method of Storage and Watcher may be called from any thread. A Watcher may
// outlive the Storage that made it; it is then closed (Next returns kClosed).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::apiserver {

// Where an object lives. Ordering (for lists) is by namespace, then name, bytewise.
struct ObjectKey {
  std::string resource;  // "group/resource": "core/pods", "sluice.dev/rolloutpools".
  std::string ns;        // "" for cluster-scoped resources.
  std::string name;

  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  // "core/pods/default/web-0", or "core/nodes/n1" when cluster-scoped; for messages and logs.
  std::string ToString() const;
};

// An object as stored: the document (its metadata.resourceVersion set) and that revision.
struct Stored {
  nlohmann::json object;
  uint64_t revision = 0;
};

struct ListResult {
  std::vector<Stored> items;  // Sorted by (namespace, name).
  // The list's resourceVersion: the storage revision when the first page was read (later pages
  // repeat it), so "list, then watch from this revision" misses no change.
  uint64_t revision = 0;
  // Non-empty when more items follow: pass it back as continue_token for the next page.
  std::string continue_token;
};

enum class WatchEventType { kAdded, kModified, kDeleted };
// "ADDED", "MODIFIED", "DELETED": the wire names of kube watch events.
std::string_view WatchEventTypeName(WatchEventType type);

// One change. For kDeleted, `object` is the last state with metadata.resourceVersion set to the
// delete's revision. Shared by every watcher that receives it: never modify (copy first).
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  uint64_t revision = 0;
  ObjectKey key;
  std::shared_ptr<const nlohmann::json> object;
  // For kModified: the state before this write, so a selector-filtered watch can tell an object
  // entering its selection (ADDED) or leaving it (DELETED) from a change within it. Null when
  // unknown (events reloaded from the persisted history after a restart).
  std::shared_ptr<const nlohmann::json> prev_object;
};
using WatchEventPtr = std::shared_ptr<const WatchEvent>;

// What Watcher::Next produced.
struct WatchNext {
  enum class Kind {
    kEvent,      // `event` is the next event.
    kTimeout,    // The timeout passed with no event; call Next again.
    kCancelled,  // The caller's token was cancelled; the watcher stays usable.
    kClosed,     // The watch ended for good; `status` says why (see Watcher).
  };
  Kind kind = Kind::kTimeout;
  WatchEventPtr event;
  Status status;  // Non-OK exactly when kind == kClosed.
};

// A stream of events for one resource (and optionally one namespace), in revision order, each
// with revision > the watch's from_revision, none skipped.
//
// Memory is bounded: replayed history is read from the shared history ring, and live events
// wait in a per-watcher queue of WatchHubOptions::watcher_queue_capacity events. A consumer that
// lets the queue overflow is closed with Unavailable ("watcher too slow"), and one whose replay
// position is evicted from the ring is closed with Gone; either way the client resumes (or
// relists on Gone) from the last revision it processed. Closed also follows Stop() (Cancelled)
// and the destruction of the storage (Unavailable).
class Watcher {
 public:
  virtual ~Watcher() = default;

  // Waits up to `timeout` (0: do not wait) for the next event. Blocks on the steady clock: this
  // is a condition-variable wait, not logic time; tests pass 0 to poll or cancel `cancel`.
  WatchNext Next(std::chrono::nanoseconds timeout, const CancellationToken& cancel = {}) {
    return WaitNext(timeout, cancel);
  }
  // Waits until an event arrives, the watcher closes, or `cancel` is cancelled.
  WatchNext Next(const CancellationToken& cancel) {
    return WaitNext(std::chrono::nanoseconds::max(), cancel);
  }

  // Closes the watch (Next returns kClosed with Cancelled), waking a blocked Next. Idempotent.
  virtual void Stop() = 0;

  // For BOOKMARK events: a revision R such that every event of this watch with revision <= R has
  // already been returned by Next: the storage's current revision when nothing is pending, else
  // just below the first pending event (at least the last revision returned, or from_revision).
  virtual uint64_t BookmarkRevision() const = 0;

 protected:
  // Next, for implementations; nanoseconds::max() means no timeout.
  virtual WatchNext WaitNext(std::chrono::nanoseconds timeout, const CancellationToken& cancel) = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // Stores a new object; sets its metadata.resourceVersion. AlreadyExists if the key is taken.
  virtual Result<Stored> Create(const ObjectKey& key, nlohmann::json object) = 0;

  virtual Result<Stored> Get(const ObjectKey& key) = 0;

  // Objects of `resource` in namespace `ns` (nullopt: every namespace), sorted by
  // (namespace, name). `limit` 0 means no limit. `continue_token` is "" for the first page, else
  // the ListResult::continue_token of the previous page (InvalidArgument when malformed or made
  // for another resource or namespace). Later pages resume after the last key of the previous
  // page and read the current state: an object that exists throughout the listing appears exactly
  // once, in its latest state; the page's revision stays the first page's (see ListResult).
  virtual Result<ListResult> List(const std::string& resource, const std::optional<std::string>& ns,
                                  size_t limit, const std::string& continue_token) = 0;

  // Replaces an existing object (NotFound if absent). With `expected_revision`, fails with
  // Conflict unless the stored revision equals it (optimistic concurrency).
  virtual Result<Stored> Update(const ObjectKey& key, nlohmann::json object,
                                std::optional<uint64_t> expected_revision) = 0;

  // Removes an object (NotFound if absent; Conflict as Update with `expected_revision`). Returns
  // the last state with metadata.resourceVersion = the delete's revision (as the DELETED event).
  virtual Result<Stored> Delete(const ObjectKey& key,
                                std::optional<uint64_t> expected_revision) = 0;

  // Events of `resource` in `ns` (nullopt: all) with revision > from_revision; 0 means "from
  // now" (the current revision). Gone ("too old resource version: X (Y)", Y the oldest revision
  // one may still watch from) when events after from_revision were dropped from the history
  // ring, which after a restart starts empty. A from_revision beyond the current one waits.
  virtual Result<std::unique_ptr<Watcher>> Watch(const std::string& resource,
                                                 const std::optional<std::string>& ns,
                                                 uint64_t from_revision) = 0;

  // The revision of the latest write (0 for a store never written).
  virtual uint64_t CurrentRevision() = 0;

  // Read-modify-write: reads the object, calls `fn` with it (metadata.resourceVersion set) and
  // writes the result on the condition that nothing changed in between, retrying with the new
  // state on Conflict (up to kGuaranteedUpdateAttempts times, then Conflict). An error from `fn`
  // is returned as is and nothing is written. When `fn` returns the object unchanged, nothing is
  // written and the current state is returned (no new revision), as kube does. `fn` may run more
  // than once; it must not have side effects.
  using UpdateFn = std::function<Result<nlohmann::json>(const nlohmann::json& current)>;
  static constexpr int kGuaranteedUpdateAttempts = 64;
  Result<Stored> GuaranteedUpdate(const ObjectKey& key, const UpdateFn& fn);
};

// Helpers shared by the implementations. Not for handlers.
namespace storage_internal {

// "pods" for "core/pods", "rolloutpools.sluice.dev" for "sluice.dev/rolloutpools": the
// qualified resource kube puts in messages.
std::string QualifiedResource(std::string_view resource);

// InvalidArgument unless resource and name are set.
Status ValidateKey(const ObjectKey& key);
// InvalidArgument unless `object` is a JSON object; then sets metadata.resourceVersion.
Status StampRevision(nlohmann::json& object, uint64_t revision);

Status NotFoundError(const ObjectKey& key);       // pods "x" not found
Status AlreadyExistsError(const ObjectKey& key);  // pods "x" already exists
// Operation cannot be fulfilled on pods "x": the object has been modified; ...
Status UpdateConflictError(const ObjectKey& key);
// Operation cannot be fulfilled on pods "x": the ResourceVersion in the precondition (E) does not
// match the ResourceVersion in record (A). The object might have been modified
Status DeleteConflictError(const ObjectKey& key, uint64_t expected, uint64_t actual);

// The decoded contents of a continue token.
struct ContinuePosition {
  uint64_t list_revision = 0;
  std::string last_ns;
  std::string last_name;
};
// Opaque (base64url of a small JSON document); binds resource and namespace scope.
std::string EncodeContinue(const std::string& resource, const std::optional<std::string>& ns,
                           const ContinuePosition& position);
Result<ContinuePosition> DecodeContinue(const std::string& token, const std::string& resource,
                                        const std::optional<std::string>& ns);

}  // namespace storage_internal
}  // namespace sluice::apiserver
