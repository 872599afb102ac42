// Informer: a local, eventually consistent cache of one resource (namespace, selectors) with
// change notifications, like client-go's SharedIndexInformer.
//
// Contract (from client-go): the cache's states are a subsequence of the server's, in order per
// object; a delete followed by a re-create may be seen as an update; after a relist, objects that
// vanished are delivered as deletes with their last known state. The store is updated before the
// handlers are called, so a handler that reads the store sees at least the object it is told
// about. Handlers run one at a time on the informer's thread; they must be quick (enqueue a key
// on a workqueue) and MUST NOT modify the objects they receive (they are const and shared).
// Update handlers receive the old and the new object. Every `resync_period` (0: never), every
// cached object is delivered to on_update(obj, obj) so controllers re-check what they own.
//
// HasSynced() turns true after the first complete list has been delivered.
//
// Several namespaces: constructed with one ResourceClient per namespace, the informer runs one
// reflector per namespace into the one store (like controller-runtime's multi-namespace cache);
// a relist of one namespace replaces only that namespace's objects, and HasSynced waits for every
// namespace's first list. last_sync_resource_version is then the last one any reflector saw.
//
// Ownership: owns its store and reflector; the RestClient must outlive it.
// Thread safety: Run on one thread (it blocks); AddEventHandler, HasSynced, store() from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/process/cancellation.h"
#include "kube/indexer.h"
#include "kube/reflector.h"

namespace sluice::kube {

struct EventHandlers {
  std::function<void(const ObjectPtr& object)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& new_object)> on_update;
  std::function<void(const ObjectPtr& last_known)> on_delete;
};

struct InformerOptions {
  ReflectorOptions reflector;
  std::chrono::milliseconds resync_period{0};
  Indexers extra_indexers;  // Added to the namespace and owner-uid indices.
};

class Informer {
 public:
  Informer(ResourceClient resource, InformerOptions options = {});
  // One reflector per resource (each a namespace of the same kind; at least one). With several,
  // each must name a distinct, non-empty namespace.
  Informer(std::vector<ResourceClient> resources, InformerOptions options = {});
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Registers handlers. Added after objects are cached, they first get on_add for each.
  void AddEventHandler(EventHandlers handlers);

  // Lists, watches and (with a resync period) resyncs until `cancel` fires.
  void Run(CancellationToken cancel);
  bool HasSynced() const { return synced_.load(); }
  // Blocks until synced or cancelled; returns HasSynced().
  bool WaitForSync(CancellationToken cancel) const;
  // Delivers on_update(obj, obj) for every cached object now.
  void Resync();

  const Indexer& store() const { return store_; }
  // The store itself, as client-go's GetStore gives it: a controller's tests put an object in
  // it (say, an older version, as a lagging watch leaves it) without events being delivered.
  // The reflector overwrites whatever the next watch event or relist brings.
  Indexer& mutable_store() { return store_; }
  std::string last_sync_resource_version() const;
  // The first namespace's reflector (the only one unless several namespaces are watched).
  const Reflector& reflector() const { return *scopes_.front()->reflector; }

 private:
  // What one reflector feeds: the store, limited to its namespace when `scoped`.
  struct Scope final : ReflectorSink {
    Scope(Informer& informer, std::string namespace_, bool scoped)
        : informer(informer), namespace_(std::move(namespace_)), scoped(scoped) {}
    void Replace(const std::vector<ObjectPtr>& objects, const std::string& rv) override {
      informer.Replace(*this, objects, rv);
    }
    void Apply(const WatchEvent& event) override { informer.Apply(event); }

    Informer& informer;
    const std::string namespace_;
    const bool scoped;
    bool listed = false;  // Guarded by informer.mu_.
    std::unique_ptr<Reflector> reflector;
  };

  void Replace(Scope& scope, const std::vector<ObjectPtr>& objects, const std::string& rv);
  void Apply(const WatchEvent& event);

  InformerOptions options_;
  Indexer store_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  mutable std::mutex mu_;  // Serialises handler calls and guards the fields below.
  mutable std::condition_variable synced_cv_;
  std::vector<EventHandlers> handlers_;
  std::string last_rv_;
  size_t listed_scopes_ = 0;
  std::atomic<bool> synced_{false};
};

}  // namespace sluice::kube
