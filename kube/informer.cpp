#include "kube/informer.h"

#include <thread>

#include "common/check.h"

namespace sluice::kube {

Informer::Informer(ResourceClient resource, InformerOptions options)
    : Informer(std::vector<ResourceClient>{resource}, std::move(options)) {}

Informer::Informer(std::vector<ResourceClient> resources, InformerOptions options)
    : options_(std::move(options)) {
  SLUICE_CHECK(!resources.empty());
  for (const auto& [name, fn] : options_.extra_indexers) (void)store_.AddIndex(name, fn);
  const bool scoped = resources.size() > 1;
  for (ResourceClient& r : resources) {
    SLUICE_CHECK(!scoped || !r.namespace_().empty());
    auto scope = std::make_unique<Scope>(*this, r.namespace_(), scoped);
    scope->reflector = std::make_unique<Reflector>(r, options_.reflector, *scope);
    scopes_.push_back(std::move(scope));
  }
}

void Informer::AddEventHandler(EventHandlers handlers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (handlers.on_add) {
    for (const ObjectPtr& o : store_.List()) handlers.on_add(o);
  }
  handlers_.push_back(std::move(handlers));
}

void Informer::Replace(Scope& scope, const std::vector<ObjectPtr>& objects, const std::string& rv) {
  std::lock_guard<std::mutex> lock(mu_);
  const ReplaceDiff diff =
      scope.scoped ? store_.ReplaceNamespace(scope.namespace_, objects) : store_.Replace(objects);
  last_rv_ = rv;
  for (const EventHandlers& h : handlers_) {
    if (h.on_delete) {
      for (const ObjectPtr& o : diff.deleted) h.on_delete(o);
    }
    if (h.on_add) {
      for (const ObjectPtr& o : diff.added) h.on_add(o);
    }
    if (h.on_update) {
      for (const auto& [old_obj, new_obj] : diff.updated) h.on_update(old_obj, new_obj);
    }
  }
  if (!scope.listed) {
    scope.listed = true;
    if (++listed_scopes_ == scopes_.size()) {
      synced_ = true;
      synced_cv_.notify_all();
    }
  }
}

void Informer::Apply(const WatchEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string rv = event.ResourceVersion();
  if (!rv.empty()) last_rv_ = rv;
  switch (event.type) {
    case WatchEventType::kAdded:
    case WatchEventType::kModified: {
      ObjectPtr old = store_.Upsert(event.object);
      for (const EventHandlers& h : handlers_) {
        if (old && h.on_update) {
          h.on_update(old, event.object);
        } else if (!old && h.on_add) {
          h.on_add(event.object);
        }
      }
      break;
    }
    case WatchEventType::kDeleted: {
      ObjectPtr old = store_.Remove(ObjectKey(*event.object));
      for (const EventHandlers& h : handlers_) {
        if (h.on_delete) h.on_delete(event.object);
      }
      (void)old;
      break;
    }
    case WatchEventType::kBookmark:
    case WatchEventType::kError:
      break;
  }
}

void Informer::Resync() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<ObjectPtr> all = store_.List();
  for (const EventHandlers& h : handlers_) {
    if (!h.on_update) continue;
    for (const ObjectPtr& o : all) h.on_update(o, o);
  }
}

void Informer::Run(CancellationToken cancel) {
  std::thread resync;
  if (options_.resync_period.count() > 0) {
    resync = std::thread([this, cancel] {
      while (!cancel.WaitFor(options_.resync_period)) {
        if (HasSynced()) Resync();
      }
    });
  }
  std::vector<std::thread> others;
  for (size_t i = 1; i < scopes_.size(); ++i) {
    others.emplace_back([this, i, cancel] { (void)scopes_[i]->reflector->Run(cancel); });
  }
  (void)scopes_.front()->reflector->Run(cancel);
  for (std::thread& t : others) t.join();
  if (resync.joinable()) resync.join();
}

bool Informer::WaitForSync(CancellationToken cancel) const {
  std::unique_lock<std::mutex> lock(mu_);
  while (!synced_.load() && !cancel.IsCancelled()) {
    synced_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return synced_.load();
}

std::string Informer::last_sync_resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rv_;
}

}  // namespace sluice::kube
