#include "localcluster/apiserver/memory_storage.h"

#include <utility>

namespace sluice::apiserver {

using storage_internal::StampRevision;
using storage_internal::ValidateKey;

MemoryStorage::MemoryStorage(const WatchHubOptions& watch_options) : hub_(watch_options, 0) {}

std::shared_ptr<const nlohmann::json> MemoryStorage::CommitLocked(
    const ObjectKey& key, WatchEventType type, nlohmann::json object, uint64_t revision,
    std::shared_ptr<const nlohmann::json> prev) {
  revision_ = revision;
  auto shared = std::make_shared<const nlohmann::json>(std::move(object));
  auto event = std::make_shared<WatchEvent>();
  event->type = type;
  event->revision = revision;
  event->key = key;
  event->object = shared;
  event->prev_object = std::move(prev);
  hub_.Publish(std::move(event));
  return shared;
}

Result<Stored> MemoryStorage::Create(const ObjectKey& key, nlohmann::json object) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  Key k{key.resource, key.ns, key.name};
  if (objects_.count(k) > 0) return storage_internal::AlreadyExistsError(key);
  const uint64_t revision = revision_ + 1;
  SLUICE_RETURN_IF_ERROR(StampRevision(object, revision));
  auto shared = CommitLocked(key, WatchEventType::kAdded, std::move(object), revision);
  objects_.emplace(std::move(k), Entry{shared, revision});
  return Stored{*shared, revision};
}

Result<Stored> MemoryStorage::Get(const ObjectKey& key) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key{key.resource, key.ns, key.name});
  if (it == objects_.end()) return storage_internal::NotFoundError(key);
  return Stored{*it->second.object, it->second.revision};
}

Result<ListResult> MemoryStorage::List(const std::string& resource,
                                       const std::optional<std::string>& ns, size_t limit,
                                       const std::string& continue_token) {
  if (resource.empty()) return Status::InvalidArgument("resource must be set", "resource");
  std::optional<storage_internal::ContinuePosition> position;
  if (!continue_token.empty()) {
    SLUICE_ASSIGN_OR_RETURN(position,
                            storage_internal::DecodeContinue(continue_token, resource, ns));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ListResult result;
  result.revision = position.has_value() ? position->list_revision : revision_;
  // First candidate: just after the continue position, else the scope's first key.
  auto it = position.has_value()
                ? objects_.upper_bound(Key{resource, position->last_ns, position->last_name})
                : objects_.lower_bound(Key{resource, ns.value_or(""), ""});
  const Key* last = nullptr;
  for (; it != objects_.end(); ++it) {
    const auto& [r, object_ns, name] = it->first;
    if (r != resource || (ns.has_value() && object_ns != *ns)) break;
    if (limit > 0 && result.items.size() == limit) {
      result.continue_token = storage_internal::EncodeContinue(
          resource, ns, {result.revision, std::get<1>(*last), std::get<2>(*last)});
      break;
    }
    result.items.push_back(Stored{*it->second.object, it->second.revision});
    last = &it->first;
  }
  return result;
}

Result<Stored> MemoryStorage::Update(const ObjectKey& key, nlohmann::json object,
                                     std::optional<uint64_t> expected_revision) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key{key.resource, key.ns, key.name});
  if (it == objects_.end()) return storage_internal::NotFoundError(key);
  if (expected_revision.has_value() && *expected_revision != it->second.revision) {
    return storage_internal::UpdateConflictError(key);
  }
  const uint64_t revision = revision_ + 1;
  SLUICE_RETURN_IF_ERROR(StampRevision(object, revision));
  auto shared =
      CommitLocked(key, WatchEventType::kModified, std::move(object), revision, it->second.object);
  it->second = Entry{shared, revision};
  return Stored{*shared, revision};
}

Result<Stored> MemoryStorage::Delete(const ObjectKey& key,
                                     std::optional<uint64_t> expected_revision) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key{key.resource, key.ns, key.name});
  if (it == objects_.end()) return storage_internal::NotFoundError(key);
  if (expected_revision.has_value() && *expected_revision != it->second.revision) {
    return storage_internal::DeleteConflictError(key, *expected_revision, it->second.revision);
  }
  const uint64_t revision = revision_ + 1;
  nlohmann::json last = *it->second.object;
  SLUICE_RETURN_IF_ERROR(StampRevision(last, revision));
  objects_.erase(it);
  auto shared = CommitLocked(key, WatchEventType::kDeleted, std::move(last), revision);
  return Stored{*shared, revision};
}

Result<std::unique_ptr<Watcher>> MemoryStorage::Watch(const std::string& resource,
                                                      const std::optional<std::string>& ns,
                                                      uint64_t from_revision) {
  return hub_.Watch(resource, ns, from_revision);
}

uint64_t MemoryStorage::CurrentRevision() {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}

}  // namespace sluice::apiserver
