// MemoryStorage: Storage held in process memory, for tests of the parts above storage (handlers,
// garbage collector, controllers). Same semantics as SqliteStorage, minus persistence: the
// revision counter starts at 0 and everything is gone when the object is destroyed.
//
// Objects are kept as parsed JSON; Get and List return copies.
//
// Thread safety: every method may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/watch_hub.h"

namespace sluice::apiserver {

class MemoryStorage final : public Storage {
 public:
  explicit MemoryStorage(const WatchHubOptions& watch_options = {});

  Result<Stored> Create(const ObjectKey& key, nlohmann::json object) override;
  Result<Stored> Get(const ObjectKey& key) override;
  Result<ListResult> List(const std::string& resource, const std::optional<std::string>& ns,
                          size_t limit, const std::string& continue_token) override;
  Result<Stored> Update(const ObjectKey& key, nlohmann::json object,
                        std::optional<uint64_t> expected_revision) override;
  Result<Stored> Delete(const ObjectKey& key, std::optional<uint64_t> expected_revision) override;
  Result<std::unique_ptr<Watcher>> Watch(const std::string& resource,
                                         const std::optional<std::string>& ns,
                                         uint64_t from_revision) override;
  uint64_t CurrentRevision() override;

 private:
  // (resource, namespace, name): sorts a resource's objects by namespace, then name.
  using Key = std::tuple<std::string, std::string, std::string>;
  struct Entry {
    std::shared_ptr<const nlohmann::json> object;  // resourceVersion stamped.
    uint64_t revision = 0;
  };

  // Assigns the next revision, stamps `object`, publishes. Requires mu_.
  std::shared_ptr<const nlohmann::json> CommitLocked(
      const ObjectKey& key, WatchEventType type, nlohmann::json object, uint64_t revision,
      std::shared_ptr<const nlohmann::json> prev = nullptr);

  std::mutex mu_;
  uint64_t revision_ = 0;         // Guarded by mu_.
  std::map<Key, Entry> objects_;  // Guarded by mu_.
  WatchHub hub_;                  // Published to under mu_, so in revision order.
};

}  // namespace sluice::apiserver
