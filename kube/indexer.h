// Indexer: the thread-safe object cache of an informer: objects by key ("ns/name"), plus named
// indices from an index value to the keys of the objects that produce it, like client-go's
// cache.Indexer.
//
// Built-in indices: kNamespaceIndex (metadata.namespace) and kOwnerUidIndex (the uid of every
// metadata.ownerReferences entry, so a controller finds the children of an object in O(1)).
// Custom IndexFuncs map an object to zero or more values; they must be pure and quick (they run
// under the store's lock) and must not throw.
//
// Ownership: stores shared_ptr<const json>; returned pointers stay valid after later updates
// (they are the old immutable objects). Thread safety: every method may be called from any
// thread; reads take a shared lock.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kube/store.h"

namespace sluice::kube {

using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json&)>;
using Indexers = std::map<std::string, IndexFunc>;

inline constexpr char kNamespaceIndex[] = "namespace";
inline constexpr char kOwnerUidIndex[] = "owner-uid";

std::vector<std::string> NamespaceIndexFunc(const nlohmann::json& object);
std::vector<std::string> OwnerUidIndexFunc(const nlohmann::json& object);
// The namespace and owner-uid indices.
Indexers DefaultIndexers();

// What Replace changed, so an informer can tell its handlers.
struct ReplaceDiff {
  std::vector<ObjectPtr> added;
  std::vector<std::pair<ObjectPtr, ObjectPtr>> updated;  // (old, new)
  std::vector<ObjectPtr> deleted;
};

class Indexer {
 public:
  explicit Indexer(Indexers indexers = DefaultIndexers());
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  // Adds an index; AlreadyExists for a taken name. Existing objects are indexed at once.
  Status AddIndex(const std::string& name, IndexFunc fn);

  // Inserts or replaces the object under its key; returns the previous one (null when new).
  ObjectPtr Upsert(ObjectPtr object);
  // Removes the object under `key`; returns it (null when absent).
  ObjectPtr Remove(const std::string& key);
  // Makes the content exactly `objects` and reports what changed. An object whose
  // resourceVersion did not change counts as updated too (a relist is a resync).
  ReplaceDiff Replace(const std::vector<ObjectPtr>& objects);
  // The same within one namespace: objects of other namespaces are left alone (and unreported),
  // so several lists, one per watched namespace, can fill one store. Every object in `objects`
  // must be in `namespace_`.
  ReplaceDiff ReplaceNamespace(const std::string& namespace_,
                               const std::vector<ObjectPtr>& objects);

  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<std::string> ListKeys() const;
  // Objects whose index `index` produced `value`; InvalidArgument for an unknown index.
  Result<std::vector<ObjectPtr>> ByIndex(const std::string& index, const std::string& value) const;
  size_t size() const;

 private:
  // Replace (scope null) or ReplaceNamespace (*scope).
  ReplaceDiff ReplaceWithin(const std::string* scope, const std::vector<ObjectPtr>& objects);
  void IndexLocked(const std::string& key, const nlohmann::json& object);
  void UnindexLocked(const std::string& key, const nlohmann::json& object);

  mutable std::shared_mutex mu_;
  Indexers indexers_;
  std::unordered_map<std::string, ObjectPtr> items_;
  // index name -> value -> keys.
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indices_;
};

}  // namespace sluice::kube
