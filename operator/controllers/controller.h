// Controller: the generic runner every Sluice controller (RolloutPool, Dataflow, TrainerJob,
// Policy) is built on, like controller-runtime's Controller: informer events become keys on a
// rate-limiting workqueue, and workers hand the keys to a reconcile function.
//
//   Controller c({.name = "rolloutpool", .max_concurrent_reconciles = 2, .registry = &registry},
//                pools, [&](const std::string& key) { return reconciler.Reconcile(key); });
//   c.WatchOwned(pods, "RolloutPool");          // A Pod changed: reconcile its pool.
//   c.Watch(policies, PoolsReferencingPolicy);  // A Policy changed: reconcile the pools using it.
//   c.Run(stop.Token());                        // Blocks until stop is cancelled.
//
// Events. Every add, update (resyncs and resourceVersion-only changes included) and delete of a
// primary object enqueues its key, "<namespace>/<name>" ("<name>" if cluster-scoped). A deleted
// object is reconciled too: the reconcile finds it absent from the primary informer's store
// (kube::Indexer::Get returns null) and cleans up. WatchOwned enqueues, for every change of an
// owned object (old and new state of an update), the owner named by its ownerReferences entry
// with `controller: true` and the given kind, in the owned object's namespace. Watch enqueues the
// keys a map function returns for the old and new state of every change. Several events for one
// key before a worker takes it collapse into one reconcile, so a reconcile must read the current
// state from the informers' stores, never assume which event caused it (level, not edge).
//
// Reconcile outcome, per key (the worker calls Done after each):
//   error                         AddRateLimited: per-key exponential backoff 5 ms, 10 ms, ... up
//                                 to 1000 s, and an overall token bucket of 10 qps, burst 100
//                                 (kube::DefaultControllerRateLimiter); logged at error level.
//   OK, requeue_after unset       Forget (the key's backoff starts over).
//   OK, requeue_after = d         Forget, then AddAfter(d); d <= 0 re-queues at once.
// A reconcile that throws is handled as an error (Internal) and logged; it should not throw.
//
// Guarantees: one key is never reconciled by two workers at once (the workqueue hands a key to
// one worker and re-queues it when Done if it was added meanwhile); keys are handed out in the
// order they were first added; different keys are reconciled concurrently, by up to
// max_concurrent_reconciles workers.
//
// Run: waits for every watched informer (primary, owned, other) to sync, like controller-runtime
// does before starting workers, so a reconcile never sees a half-filled cache; then runs the
// workers until `cancel` fires; then shuts the queue down (later events are dropped), lets each
// worker finish the reconcile it is in without starting another (keys still queued are not
// reconciled), and returns once none is in flight. Keys enqueued before Run (by events or
// Enqueue) are kept and reconciled when the workers start. Run may be called once.
//
// Metrics (controller-runtime's names; label `controller` = options.name), when a registry is
// given: controller_runtime_reconcile_total{controller,result} (result success, error or
// requeue_after), controller_runtime_reconcile_errors_total,
// controller_runtime_reconcile_time_seconds (histogram, 5 ms to 60 s),
// controller_runtime_max_concurrent_reconciles (gauge) and controller_runtime_active_workers
// (gauge: workers inside a reconcile), plus the workqueue's own (workqueue_depth,
// workqueue_adds_total, ... with label name = options.name). Several controllers share one
// registry, each under its own name; names must be unique per registry.
//
// Time: the queue's delays (backoff, requeue_after) and the reconcile time metric use
// options.clock (null: the system clock). With a clock given (a FakeClock in tests) the queue
// checks it for due items every 10 ms of real time, so a test's Advance is noticed quickly.
//
// Ownership: the informers, the registry and the clock must outlive the Controller. The event
// handlers installed on the informers (which cannot be removed) hold only shared state, not the
// Controller, so the Controller may be destroyed before the informers stop; events after that
// are dropped. The reconcile function is called only from Run's workers, so what it captures
// must live until Run returns.
//
// Thread safety: WatchOwned and Watch before Run (from one thread); Enqueue from any thread at
// any time (a no-op once Run has returned); Run once, on a thread of its own.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/informer.h"

namespace sluice::controllers {

struct ReconcileResult {
  // Reconcile the key again after this delay (for time-driven work: a lease expiring, a
  // metric window closing). Unset: only when an event enqueues the key again.
  std::optional<std::chrono::milliseconds> requeue_after;
};

// Reconciles the object with key "<namespace>/<name>" (which may no longer exist).
using ReconcileFunc = std::function<Result<ReconcileResult>(const std::string& key)>;

struct ControllerOptions {
  std::string name;  // e.g. "rolloutpool": the metrics label, workqueue name and log field.
  int max_concurrent_reconciles = 1;      // Workers; values below 1 count as 1.
  metrics::Registry* registry = nullptr;  // Null: no metrics.
  Clock* clock = nullptr;                 // Null: the system clock.
};

// The owner to enqueue for `owned`: "<namespace of owned>/<name>" of its ownerReferences entry
// with controller: true and kind `owner_kind`; nullopt when there is none.
std::optional<std::string> ControllerOwnerKey(const nlohmann::json& owned,
                                              const std::string& owner_kind);

class Controller {
 public:
  Controller(ControllerOptions options, kube::Informer& primary, ReconcileFunc reconcile);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Enqueue the owner when an owned object changes (see the header comment).
  void WatchOwned(kube::Informer& owned, std::string owner_kind);
  // Enqueue the keys `map` returns for every change of an object of another kind (e.g. Policies
  // -> the pools that reference them). `map` runs on the informer's thread: keep it quick; it
  // must not throw (a throw is logged and ignored).
  void Watch(kube::Informer& other,
             std::function<std::vector<std::string>(const nlohmann::json&)> map);
  // Enqueues `key` ("<namespace>/<name>") now.
  void Enqueue(const std::string& key);

  // Blocks: waits for the informers to sync, runs max_concurrent_reconciles workers until
  // `cancel`; then shuts the queue down and waits for in-flight reconciles.
  void Run(CancellationToken cancel);

  const std::string& name() const;

 private:
  struct Shared;
  struct Metrics;

  void Worker(const CancellationToken& cancel);
  void ReconcileOne(const std::string& key);

  std::shared_ptr<Shared> shared_;  // The queue and logger, shared with the event handlers.
  std::unique_ptr<Metrics> metrics_;
  ControllerOptions options_;
  Clock* clock_;
  ReconcileFunc reconcile_;
  std::vector<kube::Informer*> informers_;  // Waited on for sync before the workers start.
  bool ran_ = false;
};

}  // namespace sluice::controllers
