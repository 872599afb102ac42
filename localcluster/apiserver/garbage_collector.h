// GarbageCollector: the local cluster's garbage collector and namespace controller, in one loop
// over storage.
//
// Each pass lists every served resource (all namespaces, paginated), indexes the objects by
// metadata.uid and then, as kube-controller-manager's garbage collector and namespace
// controller would:
//
//   * Background: deletes (DeleteObject, the object's own propagation finalizer honoured, else
//     Background) an object whose ownerReferences all name owners that no longer exist. An
//     object with some owners gone and some alive loses the references to the gone ones and
//     stays. An owner counts as existing when an object with its uid exists in the dependent's
//     namespace, or cluster-scoped (kube looks owners up in the dependent's namespace).
//   * Foreground: for an owner marked for deletion with the "foregroundDeletion" finalizer,
//     deletes its dependents (Foreground when a dependent has dependents of its own, so the
//     cascade waits level by level); once no dependent's reference to it has
//     blockOwnerDeletion: true, removes the finalizer and the owner goes (as in kube, dependents
//     without blockOwnerDeletion are deleted but do not hold the owner). A dependent that also
//     has a live owner only loses its reference to the deleting one.
//   * Orphan: for an owner marked for deletion with the "orphan" finalizer, removes the
//     references to it from every dependent, then the finalizer, and the owner goes.
//   * Namespaces marked for deletion (status.phase "Terminating"): deletes every object of every
//     served namespaced resource in them (Background); when none is left (checked again with a
//     fresh list), removes "kubernetes" from spec.finalizers and then deletes the namespace,
//     which leaves storage once it has no other finalizers.
//   * Pods whose deletionTimestamp has passed (now >= deletionTimestamp by the Clock's wall
//     time) and that have no finalizers are deleted with grace 0: the fallback for a cluster
//     without a node agent, which normally does this after stopping the pod's containers.
//   * Any object marked for deletion with grace 0 and no finalizers left is removed
//     (CompleteDeletionIfReady), repairing a writer that stopped between the two steps.
//
// A change needs up to one pass per level (a chain A <- B <- C loses B in one pass and C in the
// next). Races with concurrent writers are settled by preconditions: a dependent is deleted
// only if unchanged since it was listed, and only when it was last written before the pass
// began (so its owners, if alive, were listed). If any list fails, objects with an owner not in
// the index are left alone for that pass. Errors are logged and the pass goes on; Conflict and
// NotFound (another writer won) are expected and only logged at debug level.
//
// Known gaps: a dependent created in the instant between an orphaning owner's last pass and its
// removal keeps a dangling reference and is then collected; ownership cycles under foreground
// deletion are not detected (kube breaks them by unblocking references).
//
// Ownership: the storage and clock must outlive the collector. Thread safety: Kick and RunOnce
// may be called from any thread (passes never overlap); Start and Stop from one owning thread.
// The `resources` function is called from the collector's thread, once per pass.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

struct GarbageCollectorOptions {
  // Time between passes on the steady clock (a condition-variable wait, not Clock time; Kick
  // cuts it short).
  std::chrono::milliseconds period{2000};
  // Objects per List page.
  size_t list_page_size = 500;
  // ObjectKey::resource of a resource; StorageResourceKey (deletion.h) when empty. Must match
  // the keys the handlers store objects under.
  std::function<std::string(const ResourceInfo&)> storage_resource;
};

class GarbageCollector {
 public:
  // The resources served now, storage version only (one entry per stored resource).
  using ResourcesFn = std::function<std::vector<ResourceInfo>()>;

  GarbageCollector(Storage* storage, ResourcesFn resources, Clock* clock, log::Logger logger,
                   GarbageCollectorOptions options = {});
  // Stops the thread.
  ~GarbageCollector();
  GarbageCollector(const GarbageCollector&) = delete;
  GarbageCollector& operator=(const GarbageCollector&) = delete;

  // Starts the background thread: a pass at once, then one per period or after a Kick. No-op
  // when running.
  void Start();
  // Wakes the thread, waits for a running pass to end and joins. Idempotent; Start may follow.
  void Stop();
  // Asks for a pass now. Kicks that arrive before the thread wakes (or during a pass) coalesce
  // into one pass.
  void Kick();

  // One pass, on the calling thread. OK when every step succeeded; otherwise the first error
  // (all are logged). Conflict and NotFound from races do not count as errors.
  Status RunOnce();

  // Passes finished so far (RunOnce and the thread's); for tests and diagnostics.
  uint64_t passes() const;

 private:
  void Loop();

  Storage* storage_;
  ResourcesFn resources_;
  Clock* clock_;
  log::Logger logger_;
  GarbageCollectorOptions options_;

  std::mutex pass_mu_;  // Held for a whole pass.

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;    // Guarded by mu_.
  bool kicked_ = false;  // Guarded by mu_.
  uint64_t passes_ = 0;  // Guarded by mu_.
  std::thread thread_;
};

}  // namespace sluice::apiserver
