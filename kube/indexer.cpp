#include "kube/indexer.h"

#include <algorithm>
#include <mutex>

namespace sluice::kube {

std::vector<std::string> NamespaceIndexFunc(const nlohmann::json& object) {
  return {NamespaceOf(object)};
}

std::vector<std::string> OwnerUidIndexFunc(const nlohmann::json& object) {
  std::vector<std::string> out;
  const auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return out;
  const auto refs = md->find("ownerReferences");
  if (refs == md->end() || !refs->is_array()) return out;
  for (const nlohmann::json& ref : *refs) {
    if (!ref.is_object()) continue;
    const auto uid = ref.find("uid");
    if (uid != ref.end() && uid->is_string()) out.push_back(uid->get<std::string>());
  }
  return out;
}

Indexers DefaultIndexers() {
  return {{kNamespaceIndex, NamespaceIndexFunc}, {kOwnerUidIndex, OwnerUidIndexFunc}};
}

Indexer::Indexer(Indexers indexers) : indexers_(std::move(indexers)) {
  for (const auto& [name, fn] : indexers_) indices_[name];
}

Status Indexer::AddIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(mu_);
  if (indexers_.count(name)) return Status::AlreadyExists("index \"" + name + "\" exists");
  indexers_[name] = fn;
  auto& index = indices_[name];
  for (const auto& [key, obj] : items_) {
    for (const std::string& v : fn(*obj)) index[v].insert(key);
  }
  return Status::Ok();
}

void Indexer::IndexLocked(const std::string& key, const nlohmann::json& object) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (const std::string& v : fn(object)) index[v].insert(key);
  }
}

void Indexer::UnindexLocked(const std::string& key, const nlohmann::json& object) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (const std::string& v : fn(object)) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.erase(it);
    }
  }
}

ObjectPtr Indexer::Upsert(ObjectPtr object) {
  const std::string key = ObjectKey(*object);
  std::unique_lock lock(mu_);
  ObjectPtr& slot = items_[key];
  ObjectPtr old = std::move(slot);
  if (old) UnindexLocked(key, *old);
  IndexLocked(key, *object);
  slot = std::move(object);
  return old;
}

ObjectPtr Indexer::Remove(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  UnindexLocked(key, *old);
  return old;
}

ReplaceDiff Indexer::Replace(const std::vector<ObjectPtr>& objects) {
  return ReplaceWithin(nullptr, objects);
}

ReplaceDiff Indexer::ReplaceNamespace(const std::string& namespace_,
                                      const std::vector<ObjectPtr>& objects) {
  return ReplaceWithin(&namespace_, objects);
}

ReplaceDiff Indexer::ReplaceWithin(const std::string* scope,
                                   const std::vector<ObjectPtr>& objects) {
  ReplaceDiff diff;
  std::unordered_map<std::string, ObjectPtr> next;
  next.reserve(objects.size());
  for (const ObjectPtr& o : objects) next[ObjectKey(*o)] = o;
  std::unique_lock lock(mu_);
  for (const auto& [key, old] : items_) {
    if (scope != nullptr && NamespaceOf(*old) != *scope) {
      next.emplace(key, old);  // Another namespace's list owns it.
      continue;
    }
    if (!next.count(key)) diff.deleted.push_back(old);
  }
  for (const auto& [key, obj] : next) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      diff.added.push_back(obj);
    } else if (scope == nullptr || NamespaceOf(*obj) == *scope) {
      diff.updated.emplace_back(it->second, obj);
    }
  }
  items_ = std::move(next);
  for (auto& [name, index] : indices_) index.clear();
  for (const auto& [key, obj] : items_) IndexLocked(key, *obj);
  return diff;
}

ObjectPtr Indexer::Get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Indexer::List() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(obj);
  return out;
}

std::vector<std::string> Indexer::ListKeys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(key);
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<ObjectPtr>> Indexer::ByIndex(const std::string& index,
                                                const std::string& value) const {
  std::shared_lock lock(mu_);
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return Status::InvalidArgument("no index named \"" + index + "\"");
  std::vector<ObjectPtr> out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  for (const std::string& key : it->second) out.push_back(items_.at(key));
  return out;
}

size_t Indexer::size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

}  // namespace sluice::kube
