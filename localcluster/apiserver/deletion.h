// Deletion: kube-apiserver's DELETE semantics over Storage (graceful deletion, finalizers,
// propagation policies, preconditions, dry run), for the DELETE handler and the garbage
// collector (garbage_collector.h).
//
// A DELETE either removes the object from storage at once (DeleteOutcome::finished) or marks it
// as being deleted and leaves it in storage (metadata.deletionTimestamp set) until something
// else finishes the job:
//
//   * objects with metadata.finalizers (existing, or the "orphan" / "foregroundDeletion"
//     finalizer the propagation policy adds) get deletionTimestamp = now and
//     deletionGracePeriodSeconds = 0; whoever removes the last finalizer calls
//     CompleteDeletionIfReady, which removes them;
//   * Pods bound to a node (spec.nodeName) with a grace period > 0 get deletionTimestamp =
//     now + grace and deletionGracePeriodSeconds = grace; the node agent deletes them again with
//     grace 0 once their containers are stopped (the garbage collector does it when the
//     deadline passes, for clusters without a node agent);
//   * Namespaces get deletionTimestamp and status.phase "Terminating"; the garbage collector
//     empties them, removes "kubernetes" from spec.finalizers and then removes them.
//
// HTTP: kube answers 200 with the object in both cases, and 202 Accepted only when deletion is
// pending and the deprecated orphanDependents=false was given (DeleteHttpStatus). Errors map
// through HttpStatusFor: NotFound 404, precondition failures Conflict 409, bad options 400 or
// 422 (ParseDeleteOptions).
//
// Differences from kube-apiserver: every resource's default propagation is Background (kube's
// is Orphan for a few legacy kinds); a Pod deleted with an effective grace period of 0 is
// removed with a single write (kube first writes deletionTimestamp, then removes it).
//
// Thread safety: free functions; concurrent calls on one Storage are safe (every write carries
// the revision it was computed from and is retried on Conflict).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

// kube's finalizer names (metav1.FinalizerDeleteDependents, FinalizerOrphanDependents) and the
// namespace finalizer in spec.finalizers (corev1.FinalizerKubernetes).
inline constexpr std::string_view kForegroundFinalizer = "foregroundDeletion";
inline constexpr std::string_view kOrphanFinalizer = "orphan";
inline constexpr std::string_view kNamespaceFinalizer = "kubernetes";

enum class Propagation { kBackground, kForeground, kOrphan };

struct DeleteOptions {
  // Unset: keep the object's own "orphan" / "foregroundDeletion" finalizer if it has one, else
  // Background. Set: add that policy's finalizer and remove the other one (kube's rule).
  std::optional<Propagation> propagation;
  // Seconds; negative means 1 (kube). Only Pods honour it (and may only shorten a running one).
  std::optional<int64_t> grace_period_seconds;
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  // Deprecated kube option, never set together with `propagation`: true acts as Orphan, false
  // as Background (Foreground for Namespaces) and makes a pending deletion answer 202.
  std::optional<bool> orphan_dependents;
  bool dry_run = false;
};

// Query parameters as the HTTP server hands them over (httplib::Params is this type).
using QueryParams = std::multimap<std::string, std::string>;

// The options of a DELETE request: from `body` (a DeleteOptions JSON object) when it is given
// and not JSON null, else from the query parameters propagationPolicy, gracePeriodSeconds,
// orphanDependents and dryRun. As in kube, query parameters are ignored when a body is given.
// Malformed input (wrong JSON types, a non-integer gracePeriodSeconds, a body of another kind)
// is InvalidArgument (400); values kube's validation rejects (an unknown propagationPolicy,
// dryRun other than "All", propagationPolicy together with orphanDependents) are Unprocessable
// (422) with kube's text, e.g. `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy:
// Unsupported value: "Foo": supported values: "Foreground", "Background", "Orphan", "nil"`.
// Every error names the field.
Result<DeleteOptions> ParseDeleteOptions(const nlohmann::json* body, const QueryParams& query);

struct DeleteOutcome {
  // finished: the last state, as storage returned it from the delete (resourceVersion = the
  // delete's revision; the state before deletion for a dry run). Otherwise the object as now
  // stored, with metadata.deletionTimestamp set (as it would be, for a dry run).
  nlohmann::json object;
  bool finished = false;  // Removed from storage (or would be, for a dry run).
};

// Deletes the object at `key`, a resource described by `info` (used to recognise core Pods and
// Namespaces and to name the resource in messages). `now` stamps deletionTimestamp. Errors:
// NotFound; Conflict for a failed precondition (`Operation cannot be fulfilled on pods "x":
// Precondition failed: UID in precondition: X, UID in object meta: Y`, likewise for
// ResourceVersion) or when concurrent writers won every one of Storage::kGuaranteedUpdateAttempts
// attempts; storage errors as they come. A dry run reads but never writes.
Result<DeleteOutcome> DeleteObject(Storage& storage, const ResourceInfo& info, const ObjectKey& key,
                                   const DeleteOptions& options, Clock::WallTime now);

// To call after every successful write of an existing object (update, patch, status, finalize)
// with what the write returned. When the object is marked for deletion with a zero grace
// period (metadata.deletionTimestamp set and deletionGracePeriodSeconds 0, as DeleteObject
// marks objects it keeps for their finalizers), has no metadata.finalizers left and, for a
// Namespace, no spec.finalizers either, removes it from storage (expected revision:
// after_update.revision) and returns the deleted state. Otherwise returns `after_update`
// unchanged. A Pod still in its grace period is not removed here (it waits for its grace-0
// delete, as in kube). When another writer changed the object first, re-reads it and decides
// again; when it is already gone, returns the last state seen.
Result<Stored> CompleteDeletionIfReady(Storage& storage, const ObjectKey& key,
                                       const Stored& after_update);

// The HTTP status kube answers a successful DELETE with: 202 when the deletion is pending and
// options.orphan_dependents == false, else 200.
int DeleteHttpStatus(const DeleteOptions& options, const DeleteOutcome& outcome);

// The storage resource key of ObjectKey::resource for `info`, as storage.h spells it:
// "core/pods", "sluice.dev/rolloutpools".
std::string StorageResourceKey(const ResourceInfo& info);

}  // namespace sluice::apiserver
