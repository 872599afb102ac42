// What one reconcile of a RolloutPool does to its replica Pods, decided from facts alone.
//
// The reconciler (reconciler.h) gathers the facts (the pool's Pods, what each worker reports on
// GET /v1/status, the placement targets after autoscaling), calls Plan, and carries out the
// actions in order. Plan holds every rule about which replica is drained, deleted, force-deleted,
// created or pointed at a weight relay, so those rules have table tests without an API server or
// workers; the reconciler holds only I/O.
//
// The rules, in the order Plan applies them:
//   1. Force-delete: a replica whose node abandoned its deletion (abandoned_termination.h), once
//      per Pod uid.
//   2. A pool being deleted drains every replica, and removes its finalizer once none is left.
//   3. Weight relays (placement/weight_relays.h): each replica whose worker reports another relay
//      than the one it is assigned is told; a joiner that was not asked for its status is told
//      too (the reconciler asks it first and skips it when it already agrees). Replicas that
//      leave in this round (4) or ended are neither relays nor joiners.
//   4. Surplus replicas (placement/scale_down.h), spilled ones, and replicas already draining are
//      drained, then deleted (below); ended replicas (Failed/Succeeded) are deleted at once and
//      re-created after a back-off.
//   5. Missing replicas are created, except those still in their back-off.
//   6. Rolling update: replicas of an old template are replaced one region at a time, at most
//      maxUnavailable minus the replicas already unavailable (not Ready and not leaving).
//
// Draining a replica: a Ready replica not yet asked is asked (POST /v1/drain, annotated with the
// time); a Ready one that was asked is deleted once its worker reports drained or
// spec.drain.gracePeriodSeconds have passed, and asked again when its worker answers but is not
// draining (it restarted, or the request was lost); a replica that is not Ready is deleted at
// once; one already Terminating is left alone.
//
// Pure functions: no I/O, no clocks (times are Unix seconds passed in). Thread safety: values
// only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/placement/region_targets.h"
#include "operator/placement/spillover.h"

namespace sluice::controllers::rolloutpool {

// What a replica's worker answered on GET /v1/status.
struct WorkerReport {
  bool drained = false;   // "drained": it finished or handed back its work.
  bool draining = false;  // "draining": it was asked to drain.
  std::string relay;      // "weights.relay": the peer it fetches weights from ("" none).
  nlohmann::json raw;     // The whole reply, shown in the pool's status.
};

// A WorkerReport from a /v1/status reply (missing fields read as false / ""; in_flight is the
// caller's, in placement::ReplicaFacts).
WorkerReport WorkerReportOf(const nlohmann::json& reply);

// One replica Pod of the pool.
struct Replica {
  placement::ReplicaFacts placement;  // Name, region, index, Ready, scheduling, load, draining.
  std::string uid;                    // metadata.uid.
  std::string phase;                  // status.phase; "Pending" when unset.
  std::string url;                    // The worker's base URL; "" while the Pod has no IP.
  bool terminating = false;           // metadata.deletionTimestamp is set.
  bool current = false;               // Its template hash is the pool's current one.
  // sluice.dev/draining-since (Unix seconds; 0 when unreadable): when it was asked to drain.
  std::optional<int64_t> draining_since;
  bool termination_abandoned = false;  // abandoned_termination.h, at the time of the facts.
  std::optional<WorkerReport> worker;  // Absent: not asked (not Ready) or no answer.
};

// Everything Plan looks at.
struct PoolFacts {
  std::string pool;             // The pool's name (replica Pods are named after it).
  bool deleting = false;        // metadata.deletionTimestamp is set.
  bool has_finalizer = false;   // metadata.finalizers holds sluice.dev/drain.
  bool regional = false;        // spec.placement is set.
  int64_t grace_seconds = 120;  // spec.drain.gracePeriodSeconds.
  int64_t max_unavailable = 1;  // MaxUnavailable(pool).
  std::vector<Replica> replicas;
  // The placement plan after autoscaling (one target with region "" without placement); unused
  // while deleting.
  std::vector<placement::RegionTarget> targets;
  std::set<std::string> spilled;        // Replicas to move to another region (spillover.h).
  std::set<std::string> force_deleted;  // Uids force-deleted by an earlier reconcile.
  std::set<std::string> backing_off;    // Replica names whose re-creation waits on a back-off.
};

enum class ActionKind {
  kForceDelete,      // Delete with grace 0 and a uid precondition; Warning ForceDeletedReplica.
  kAskToDrain,       // POST /v1/drain, annotate draining-since; Normal DrainingReplica.
  kAskAgain,         // POST /v1/drain again (no Event): the worker is not draining.
  kDelete,           // Delete the Pod; Normal DeletedReplica.
  kDeleteEnded,      // Delete an ended Pod and start its back-off; Warning ReplicaFailed.
  kCreate,           // Create replica `index` in `region` (Pod `replica`).
  kSetRelay,         // POST /v1/relay {"url": relay}.
  kRemoveFinalizer,  // The pool is being deleted and has no replica left.
};

struct Action {
  ActionKind kind;
  std::string replica;  // Pod name; "" for kRemoveFinalizer.
  std::string reason;   // Why, for the Event ("scale-down", "its template changed", ...).
  std::string region;   // kCreate: the region ("" without placement).
  int index = 0;        // kCreate: the replica index in its region.
  std::string relay;    // kSetRelay: the URL ("" makes the replica its region's relay).

  bool operator==(const Action&) const = default;
};

// The actions of one reconcile, in the order to carry them out. `now_seconds` is Unix seconds.
std::vector<Action> Plan(const PoolFacts& facts, int64_t now_seconds);

// The steps of draining `replica` for `reason` (the rule above): none, kAskToDrain, kDelete, or
// kAskAgain and/or kDelete.
std::vector<Action> DrainSteps(const Replica& replica, const std::string& reason,
                               int64_t grace_seconds, int64_t now_seconds);

// Readable form of an action, for test failure messages and logs.
std::string ToString(const Action& action);

}  // namespace sluice::controllers::rolloutpool
