// SqliteStorage: the persistent Storage of the local API server, one SQLite database file.
//
// Layout: table `objects` (resource, namespace, name, revision, json) keyed by the first three,
// table `meta` with the revision counter, and table `events` with the newest
// WatchHubOptions::history_capacity watch events. Every write is one transaction
// (BEGIN IMMEDIATE ... COMMIT) that changes the object row, the counter and the event log
// together, so a crash leaves either the whole write or none of it, and the counter is never
// below an object's revision. Reopening the file restores every object, the counter and the
// watch history, so watches from a revision before the restart resume where they were (Gone only
// when they are older than the kept history, as without a restart).
//
// Durability: WAL mode. With synchronous=NORMAL (the default) a committed write survives the
// process being killed (it is in the WAL, in the OS page cache) but the last writes before a power
// loss or kernel crash may roll back (the file stays consistent). synchronous_full=true fsyncs the
// WAL on every commit: durable against power loss too, at a large cost in writes per second.
//
// One process owns the file: the connection uses locking_mode=EXCLUSIVE, so a second
// SqliteStorage (in this process or another) fails to open with Unavailable instead of writing
// behind the first one's watchers. A killed owner's lock goes with its process.
//
// Ownership: owns its connection. Thread safety: every method may be called from any thread; one
// mutex serializes use of the connection.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/watch_hub.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sluice::apiserver {

struct SqliteStorageOptions {
  std::string path;  // The database file; created if missing (its directory must exist).
  bool synchronous_full = false;  // See the header comment.
  WatchHubOptions watch;
};

class SqliteStorage final : public Storage {
 public:
  // Opens (creating if needed) and checks the database: Corruption when the counter is below an
  // object's revision or the file is not a Sluice store; Unavailable when another owner holds it.
  static Result<std::unique_ptr<SqliteStorage>> Open(const SqliteStorageOptions& options);
  ~SqliteStorage() override;
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;

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
  struct Statements;  // Prepared statements; defined in the .cpp.
  enum class WriteKind { kCreate, kUpdate, kDelete };

  SqliteStorage(sqlite3* db, std::unique_ptr<Statements> statements, uint64_t revision,
                const WatchHubOptions& watch, std::vector<WatchEventPtr> history);

  // The one write path: checks existence and expected_revision, assigns the next revision,
  // writes row and counter in one transaction, then publishes the event.
  Result<Stored> Write(WriteKind kind, const ObjectKey& key, std::optional<nlohmann::json> object,
                       std::optional<uint64_t> expected_revision);
  // The stored (revision, json text) of `key`, nullopt if absent. Requires mu_.
  Result<std::optional<std::pair<uint64_t, std::string>>> ReadLocked(const ObjectKey& key);

  std::mutex mu_;
  sqlite3* const db_;                       // Guarded by mu_.
  std::unique_ptr<Statements> statements_;  // Guarded by mu_.
  uint64_t revision_;                       // Guarded by mu_; equals the stored counter.
  const size_t history_capacity_;           // Events kept in the `events` table.
  WatchHub hub_;                            // Published to under mu_, so in revision order.
};

}  // namespace sluice::apiserver
