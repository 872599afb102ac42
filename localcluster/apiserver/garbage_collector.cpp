#include "localcluster/apiserver/garbage_collector.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/json_fields.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

const json* Metadata(const json& object) {
  if (!object.is_object()) return nullptr;
  auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

// metadata.ownerReferences when it is an array, else an empty array.
json OwnerReferences(const json& object) {
  const json* meta = Metadata(object);
  if (meta == nullptr) return json::array();
  auto it = meta->find("ownerReferences");
  return it != meta->end() && it->is_array() ? *it : json::array();
}

std::string RefUid(const json& ref) {
  if (!ref.is_object()) return "";
  auto it = ref.find("uid");
  return it != ref.end() && it->is_string() ? it->get<std::string>() : "";
}

bool RefBlocks(const json& ref) {
  if (!ref.is_object()) return false;
  auto it = ref.find("blockOwnerDeletion");
  return it != ref.end() && it->is_boolean() && it->get<bool>();
}

bool IsCoreResource(const ResourceInfo& info, std::string_view plural) {
  return info.group.empty() && info.plural == plural;
}

bool Ignorable(const Status& status) {
  return status.code() == StatusCode::kConflict || status.code() == StatusCode::kNotFound;
}

struct Item {
  size_t resource = 0;  // Index into Pass::resources_.
  ObjectKey key;
  Stored stored;
  std::string uid;
  bool deleting = false;  // metadata.deletionTimestamp set.
  std::vector<std::string> finalizers;
};

enum class OwnerState {
  kSolid,    // Exists and is not waiting for its dependents.
  kWaiting,  // Exists, marked for deletion with the foregroundDeletion finalizer.
  kAbsent,   // Gone (or in another namespace than the dependent).
  kUnknown,  // Not in the index, but the index is incomplete.
};

// One pass over a snapshot of storage.
class Pass {
 public:
  // `start_revision` must be read before `resources` is (see Dependent).
  Pass(Storage& storage, uint64_t start_revision, std::vector<ResourceInfo> resources,
       Clock::WallTime now, const log::Logger& logger, const GarbageCollectorOptions& options)
      : storage_(storage),
        start_revision_(start_revision),
        resources_(std::move(resources)),
        now_(now),
        logger_(logger),
        options_(options) {}

  Status Run() {
    Snapshot();
    for (size_t i = 0; i < items_.size(); ++i) {
      const Item& item = items_[i];
      if (!item.deleting) continue;
      if (ContainsString(item.finalizers, kOrphanFinalizer)) Orphan(item);
      if (ContainsString(item.finalizers, kForegroundFinalizer)) Foreground(item);
      const ResourceInfo& info = resources_[item.resource];
      if (IsCoreResource(info, "namespaces")) Namespace(item);
      if (IsCoreResource(info, "pods")) ExpirePod(item);
      Report(CompleteDeletionIfReady(storage_, item.key, item.stored).status(), item,
             "complete deletion");
    }
    for (const Item& item : items_) Dependent(item);
    return first_error_;
  }

 private:
  std::string KeyOf(const ResourceInfo& info) const {
    return options_.storage_resource ? options_.storage_resource(info) : StorageResourceKey(info);
  }

  void Snapshot() {
    std::set<std::string> seen;
    for (size_t r = 0; r < resources_.size(); ++r) {
      const std::string resource = KeyOf(resources_[r]);
      if (!seen.insert(resource).second) continue;
      keys_.emplace_back(r, resource);
      std::string token;
      do {
        Result<ListResult> page =
            storage_.List(resource, std::nullopt, options_.list_page_size, token);
        if (!page.ok()) {
          complete_ = false;
          Fail(page.status(), {{"resource", resource}, {"step", "list"}});
          break;
        }
        for (Stored& stored : page->items) Add(r, resource, std::move(stored));
        token = page->continue_token;
      } while (!token.empty());
    }
  }

  void Add(size_t r, const std::string& resource, Stored stored) {
    Item item;
    item.resource = r;
    const json* meta = Metadata(stored.object);
    if (meta == nullptr) return;
    item.key = ObjectKey{resource, StringAt(stored.object, "/metadata/namespace"),
                         StringAt(stored.object, "/metadata/name")};
    if (!resources_[r].namespaced) item.key.ns.clear();
    item.uid = StringAt(stored.object, "/metadata/uid");
    item.deleting = !StringAt(stored.object, "/metadata/deletionTimestamp").empty();
    item.finalizers = StringsAt(stored.object, "metadata", "finalizers");
    item.stored = std::move(stored);
    const size_t index = items_.size();
    if (!item.uid.empty()) by_uid_.emplace(item.uid, index);
    for (const json& ref : OwnerReferences(item.stored.object)) {
      const std::string uid = RefUid(ref);
      if (!uid.empty()) dependents_[uid].push_back(index);
    }
    items_.push_back(std::move(item));
  }

  // The owner a reference of `dependent` names, when it is in the index and visible from the
  // dependent's namespace.
  const Item* FindOwner(const json& ref, const Item& dependent) const {
    auto it = by_uid_.find(RefUid(ref));
    if (it == by_uid_.end()) return nullptr;
    const Item& owner = items_[it->second];
    if (!owner.key.ns.empty() && owner.key.ns != dependent.key.ns) return nullptr;
    return &owner;
  }

  OwnerState StateOf(const json& ref, const Item& dependent) const {
    if (RefUid(ref).empty()) return OwnerState::kSolid;  // Malformed: never act on it.
    const Item* owner = FindOwner(ref, dependent);
    if (owner == nullptr) return complete_ ? OwnerState::kAbsent : OwnerState::kUnknown;
    if (owner->deleting && ContainsString(owner->finalizers, kForegroundFinalizer)) {
      return OwnerState::kWaiting;
    }
    return OwnerState::kSolid;
  }

  // The dependents whose references resolve to `owner`.
  std::vector<const Item*> DependentsOf(const Item& owner) const {
    std::vector<const Item*> out;
    if (owner.uid.empty()) return out;
    auto it = dependents_.find(owner.uid);
    if (it == dependents_.end()) return out;
    for (size_t index : it->second) {
      const Item& dependent = items_[index];
      for (const json& ref : OwnerReferences(dependent.stored.object)) {
        if (RefUid(ref) == owner.uid && FindOwner(ref, dependent) == &owner) {
          out.push_back(&dependent);
          break;
        }
      }
    }
    return out;
  }

  // Background and foreground collection of one object, as a dependent. Only objects last
  // written before the pass began: their owners, if alive, were created before that too, under
  // resources already served, so a live owner is in the index (unless a list failed).
  void Dependent(const Item& item) {
    if (item.deleting || item.stored.revision > start_revision_) return;
    const json refs = OwnerReferences(item.stored.object);
    if (refs.empty()) return;
    bool solid = false, waiting = false;
    std::set<std::string> remove;  // Uids of gone and waiting owners.
    for (const json& ref : refs) {
      switch (StateOf(ref, item)) {
        case OwnerState::kUnknown:
          return;
        case OwnerState::kSolid:
          solid = true;
          break;
        case OwnerState::kWaiting:
          waiting = true;
          remove.insert(RefUid(ref));
          break;
        case OwnerState::kAbsent:
          remove.insert(RefUid(ref));
          break;
      }
    }
    if (solid) {
      if (!remove.empty()) RemoveOwnerReferences(item, remove, &refs);
      return;
    }
    DeleteOptions options;
    if (waiting && !DependentsOf(item).empty()) options.propagation = Propagation::kForeground;
    Delete(item, options, waiting ? "delete dependent of foreground owner" : "delete garbage");
  }

  void Orphan(const Item& owner) {
    bool done = true;
    for (const Item* dependent : DependentsOf(owner)) {
      done &= RemoveOwnerReferences(*dependent, {owner.uid}, nullptr);
    }
    if (done) RemoveFinalizer(owner, kOrphanFinalizer);
  }

  void Foreground(const Item& owner) {
    for (const Item* dependent : DependentsOf(owner)) {
      for (const json& ref : OwnerReferences(dependent->stored.object)) {
        if (RefUid(ref) == owner.uid && RefBlocks(ref)) return;  // Still blocked.
      }
    }
    RemoveFinalizer(owner, kForegroundFinalizer);
  }

  void Namespace(const Item& ns) {
    const std::string& name = ns.key.name;
    for (const Item& item : items_) {
      if (item.deleting || item.key.ns != name || !resources_[item.resource].namespaced) continue;
      DeleteOptions options;
      options.propagation = Propagation::kBackground;
      Delete(item, options, "delete namespace content");
    }
    // What is left now, freshly listed (the snapshot predates the deletes above).
    for (const auto& [r, resource] : keys_) {
      if (!resources_[r].namespaced) continue;
      Result<ListResult> left = storage_.List(resource, name, 1, "");
      if (!left.ok()) {
        Fail(left.status(), {{"resource", resource}, {"namespace", name}, {"step", "list"}});
        return;
      }
      if (!left->items.empty()) return;
    }
    const std::string uid = ns.uid;
    Result<Stored> finalized =
        storage_.GuaranteedUpdate(ns.key, [&uid](const json& current) -> Result<json> {
          if (StringAt(current, "/metadata/uid") != uid)
            return Status::NotFound("namespace replaced");
          std::vector<std::string> finalizers = StringsAt(current, "spec", "finalizers");
          auto it = std::find(finalizers.begin(), finalizers.end(), kNamespaceFinalizer);
          if (it == finalizers.end()) return current;
          finalizers.erase(it);
          json updated = current;
          updated["spec"]["finalizers"] = finalizers;
          return updated;
        });
    if (!finalized.ok()) {
      Report(finalized.status(), ns, "finalize namespace");
      return;
    }
    if (!StringsAt(finalized->object, "spec", "finalizers").empty()) return;  // Someone else's.
    Delete(ns, DeleteOptions{}, "delete namespace", /*unchanged=*/false);
  }

  void ExpirePod(const Item& pod) {
    if (!pod.finalizers.empty()) return;
    const std::optional<Clock::WallTime> at =
        TryParseTime(StringAt(pod.stored.object, "/metadata/deletionTimestamp"));
    if (!at || now_ < *at) return;
    DeleteOptions options;
    options.grace_period_seconds = 0;
    Delete(pod, options, "delete pod past its grace period");
  }

  // DeleteObject, on the condition that the object is the one listed (and, with `unchanged`, not
  // written since).
  void Delete(const Item& item, DeleteOptions options, std::string_view what,
              bool unchanged = true) {
    options.precondition_uid = item.uid;
    if (unchanged) options.precondition_resource_version = std::to_string(item.stored.revision);
    Result<DeleteOutcome> outcome =
        DeleteObject(storage_, resources_[item.resource], item.key, options, now_);
    if (outcome.ok()) {
      logger_.Debug("garbage collector: " + std::string(what),
                    {{"object", item.key.ToString()}, {"removed", outcome->finished}});
    }
    Report(outcome.status(), item, what);
  }

  // Removes the references to `uids` from the object's ownerReferences; with `expected`, only
  // while the references are still those. Returns whether it succeeded (or the object is gone).
  bool RemoveOwnerReferences(const Item& item, const std::set<std::string>& uids,
                             const json* expected) {
    const std::string uid = item.uid;
    Result<Stored> result =
        storage_.GuaranteedUpdate(item.key, [&](const json& current) -> Result<json> {
          if (StringAt(current, "/metadata/uid") != uid) return Status::NotFound("object replaced");
          const json refs = OwnerReferences(current);
          if (expected != nullptr && refs != *expected) {
            return Status::Conflict("ownerReferences changed");
          }
          json kept = json::array();
          for (const json& ref : refs) {
            if (uids.count(RefUid(ref)) == 0) kept.push_back(ref);
          }
          json updated = current;
          if (kept.empty()) {
            updated["metadata"].erase("ownerReferences");
          } else {
            updated["metadata"]["ownerReferences"] = std::move(kept);
          }
          return updated;
        });
    Report(result.status(), item, "remove owner references");
    return result.ok() || result.status().code() == StatusCode::kNotFound;
  }

  void RemoveFinalizer(const Item& item, std::string_view finalizer) {
    const std::string uid = item.uid;
    Result<Stored> updated =
        storage_.GuaranteedUpdate(item.key, [&](const json& current) -> Result<json> {
          if (StringAt(current, "/metadata/uid") != uid) return Status::NotFound("object replaced");
          std::vector<std::string> finalizers = StringsAt(current, "metadata", "finalizers");
          auto it = std::find(finalizers.begin(), finalizers.end(), finalizer);
          if (it == finalizers.end()) return current;
          finalizers.erase(it);
          json result = current;
          if (finalizers.empty()) {
            result["metadata"].erase("finalizers");
          } else {
            result["metadata"]["finalizers"] = finalizers;
          }
          return result;
        });
    if (!updated.ok()) {
      Report(updated.status(), item, "remove finalizer");
      return;
    }
    Report(CompleteDeletionIfReady(storage_, item.key, *updated).status(), item,
           "complete deletion");
  }

  void Report(const Status& status, const Item& item, std::string_view what) {
    if (status.ok()) return;
    log::Fields fields = {{"object", item.key.ToString()}, {"step", std::string(what)}};
    if (Ignorable(status)) {
      fields.emplace_back("error", status.message());
      logger_.Debug("garbage collector: lost a race", fields);
      return;
    }
    Fail(status, std::move(fields));
  }

  void Fail(const Status& status, log::Fields fields) {
    fields.emplace_back("error", status.ToString());
    logger_.Error("garbage collector step failed", fields);
    if (first_error_.ok()) first_error_ = status;
  }

  Storage& storage_;
  // Objects last written at or before this revision existed, with their ownerReferences, before
  // the resources were read and listed.
  const uint64_t start_revision_;
  const std::vector<ResourceInfo> resources_;
  const Clock::WallTime now_;
  const log::Logger& logger_;
  const GarbageCollectorOptions& options_;

  std::vector<std::pair<size_t, std::string>> keys_;  // (resource index, storage key), listed.
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> by_uid_;
  std::unordered_map<std::string, std::vector<size_t>> dependents_;  // Owner uid -> items.
  bool complete_ = true;                                             // Every list succeeded.
  Status first_error_;
};

}  // namespace

GarbageCollector::GarbageCollector(Storage* storage, ResourcesFn resources, Clock* clock,
                                   log::Logger logger, GarbageCollectorOptions options)
    : storage_(storage),
      resources_(std::move(resources)),
      clock_(clock),
      logger_(std::move(logger)),
      options_(std::move(options)) {
  if (options_.list_page_size == 0) options_.list_page_size = 500;
}

GarbageCollector::~GarbageCollector() { Stop(); }

void GarbageCollector::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void GarbageCollector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GarbageCollector::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

uint64_t GarbageCollector::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

Status GarbageCollector::RunOnce() {
  std::lock_guard<std::mutex> pass_lock(pass_mu_);
  const uint64_t start_revision = storage_->CurrentRevision();
  Pass pass(*storage_, start_revision, resources_(), clock_->WallNow(), logger_, options_);
  Status status = pass.Run();
  std::lock_guard<std::mutex> lock(mu_);
  ++passes_;
  return status;
}

void GarbageCollector::Loop() {
  while (true) {
    (void)RunOnce();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, options_.period, [this] { return stop_ || kicked_; });
    if (stop_) return;
    kicked_ = false;
  }
}

}  // namespace sluice::apiserver
