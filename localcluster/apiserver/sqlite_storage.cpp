#include "localcluster/apiserver/sqlite_storage.h"

#include <sqlite3.h>

#include <limits>
#include <utility>
#include <vector>

namespace sluice::apiserver {
namespace {

using storage_internal::StampRevision;
using storage_internal::ValidateKey;

// 1: objects and meta. 2: adds `events`, the recent watch history (migrated in place).
constexpr int kSchemaVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS objects (
  resource TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  revision INTEGER NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY NOT NULL,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('revision', 0);
CREATE TABLE IF NOT EXISTS events (
  revision INTEGER PRIMARY KEY NOT NULL,
  type INTEGER NOT NULL,
  resource TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  json TEXT NOT NULL
);
)sql";

// The Status for a failed SQLite call: the code picks the kind, the message is SQLite's own.
Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  const std::string message = "sqlite: " + std::string(what) + ": " +
                              (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(message + " (is another sluice-apiserver using this file?)");
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(message);
    default:
      return Status::Internal(message);
  }
}

// Runs SQL that returns no rows.
Status Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string message = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  Status status = SqliteError(db, rc, sql);
  return Status(status.code(), "sqlite: " + std::string(sql) + ": " + message);
}

// Resets a statement (and its bindings) when the scope ends, so its locks are released.
class StatementScope {
 public:
  explicit StatementScope(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StatementScope() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StatementScope(const StatementScope&) = delete;
  StatementScope& operator=(const StatementScope&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

void BindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void BindKey(sqlite3_stmt* stmt, const ObjectKey& key) {
  BindText(stmt, 1, key.resource);
  BindText(stmt, 2, key.ns);
  BindText(stmt, 3, key.name);
}

std::string ColumnText(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text == nullptr ? std::string() : std::string(text, sqlite3_column_bytes(stmt, column));
}

Result<nlohmann::json> ParseStored(const std::string& text, const ObjectKey& key) {
  nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) {
    return Status::Corruption("stored object " + key.ToString() + " is not a JSON object");
  }
  return object;
}

Result<std::string> Serialize(const nlohmann::json& object) {
  try {
    return object.dump();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("object cannot be serialized: ") + e.what());
  }
}

}  // namespace

struct SqliteStorage::Statements {
  sqlite3_stmt* begin = nullptr;
  sqlite3_stmt* commit = nullptr;
  sqlite3_stmt* rollback = nullptr;
  sqlite3_stmt* get = nullptr;
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* update = nullptr;
  sqlite3_stmt* remove = nullptr;
  sqlite3_stmt* set_revision = nullptr;
  sqlite3_stmt* list_all = nullptr;
  sqlite3_stmt* list_namespace = nullptr;
  sqlite3_stmt* insert_event = nullptr;
  sqlite3_stmt* trim_events = nullptr;

  ~Statements() {
    for (sqlite3_stmt* stmt : {begin, commit, rollback, get, insert, update, remove, set_revision,
                               list_all, list_namespace, insert_event, trim_events}) {
      sqlite3_finalize(stmt);  // A no-op for null.
    }
  }

  Status Prepare(sqlite3* db) {
    const std::pair<sqlite3_stmt**, const char*> all[] = {
        {&begin, "BEGIN IMMEDIATE"},
        {&commit, "COMMIT"},
        {&rollback, "ROLLBACK"},
        {&get,
         "SELECT revision, json FROM objects WHERE resource = ?1 AND namespace = ?2 AND "
         "name = ?3"},
        {&insert,
         "INSERT INTO objects (resource, namespace, name, revision, json) "
         "VALUES (?1, ?2, ?3, ?4, ?5)"},
        {&update,
         "UPDATE objects SET revision = ?4, json = ?5 WHERE resource = ?1 AND "
         "namespace = ?2 AND name = ?3"},
        {&remove, "DELETE FROM objects WHERE resource = ?1 AND namespace = ?2 AND name = ?3"},
        {&set_revision, "UPDATE meta SET value = ?1 WHERE key = 'revision'"},
        {&list_all,
         "SELECT namespace, name, revision, json FROM objects WHERE resource = ?1 AND "
         "(namespace, name) > (?2, ?3) ORDER BY namespace, name LIMIT ?4"},
        {&list_namespace,
         "SELECT namespace, name, revision, json FROM objects WHERE "
         "resource = ?1 AND namespace = ?2 AND name > ?3 ORDER BY name LIMIT ?4"},
        {&insert_event,
         "INSERT INTO events (revision, type, resource, namespace, name, json) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
        {&trim_events, "DELETE FROM events WHERE revision <= ?1"},
    };
    for (const auto& [stmt, sql] : all) {
      const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr);
      if (rc != SQLITE_OK) return SqliteError(db, rc, sql);
    }
    return Status::Ok();
  }
};

namespace {

// Runs a no-row prepared statement (BEGIN, COMMIT, an INSERT...).
Status StepStatement(sqlite3* db, sqlite3_stmt* stmt, std::string_view what) {
  StatementScope scope(stmt);
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db, rc, what);
  return Status::Ok();
}

// A write transaction: BEGIN IMMEDIATE on construction (check status()), ROLLBACK on
// destruction unless Commit succeeded.
class Transaction {
 public:
  Transaction(sqlite3* db, sqlite3_stmt* begin, sqlite3_stmt* commit, sqlite3_stmt* rollback)
      : db_(db), commit_(commit), rollback_(rollback), status_(StepStatement(db, begin, "BEGIN")) {}
  ~Transaction() {
    if (status_.ok() && !committed_) (void)StepStatement(db_, rollback_, "ROLLBACK");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  const Status& status() const { return status_; }
  Status Commit() {
    Status status = StepStatement(db_, commit_, "COMMIT");
    // A failed COMMIT leaves the transaction open; the destructor rolls it back.
    committed_ = status.ok();
    return status;
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* commit_;
  sqlite3_stmt* rollback_;
  Status status_;
  bool committed_ = false;
};

// Reads one integer from a query returning one row.
Result<int64_t> QueryInt(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, sql);
  rc = sqlite3_step(stmt);
  Result<int64_t> result = rc == SQLITE_ROW ? Result<int64_t>(sqlite3_column_int64(stmt, 0))
                                            : Result<int64_t>(SqliteError(db, rc, sql));
  if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) == SQLITE_NULL) result = int64_t{0};
  sqlite3_finalize(stmt);
  return result;
}

// Creates or checks the schema; returns the stored revision counter.
Result<uint64_t> InitDatabase(sqlite3* db, bool synchronous_full) {
  // EXCLUSIVE before the first access: one owner, and WAL without a shared-memory index.
  SLUICE_RETURN_IF_ERROR(Exec(db, "PRAGMA locking_mode = EXCLUSIVE"));
  {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db, rc, "PRAGMA journal_mode");
    rc = sqlite3_step(stmt);
    const std::string mode = rc == SQLITE_ROW ? ColumnText(stmt, 0) : std::string();
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW) return SqliteError(db, rc, "PRAGMA journal_mode = WAL");
    if (mode != "wal") return Status::Internal("sqlite: cannot enable WAL mode (got " + mode + ")");
  }
  SLUICE_RETURN_IF_ERROR(
      Exec(db, synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
  SLUICE_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status status = [&]() -> Status {
    SLUICE_ASSIGN_OR_RETURN(int64_t version, QueryInt(db, "PRAGMA user_version"));
    if (version < 0 || version > kSchemaVersion) {
      return Status::Corruption("sqlite: schema version " + std::to_string(version) +
                                " is newer than the supported " + std::to_string(kSchemaVersion));
    }
    SLUICE_RETURN_IF_ERROR(Exec(db, kSchema));  // Creates what an older version lacks.
    const std::string set_version = "PRAGMA user_version = " + std::to_string(kSchemaVersion);
    return Exec(db, set_version.c_str());
  }();
  if (!status.ok()) {
    (void)Exec(db, "ROLLBACK");
    return status;
  }
  SLUICE_RETURN_IF_ERROR(Exec(db, "COMMIT"));
  SLUICE_ASSIGN_OR_RETURN(int64_t counter,
                          QueryInt(db, "SELECT value FROM meta WHERE key = 'revision'"));
  SLUICE_ASSIGN_OR_RETURN(int64_t max_object, QueryInt(db, "SELECT MAX(revision) FROM objects"));
  if (counter < 0 || counter < max_object) {
    return Status::Corruption("sqlite: revision counter " + std::to_string(counter) +
                              " is below the newest object's revision " +
                              std::to_string(max_object));
  }
  return static_cast<uint64_t>(counter);
}

// The newest consecutive events ending at `revision`, at most `capacity` (the watch history
// a restarted server resumes watches from). Older or non-consecutive rows are ignored: the
// history then simply starts later.
Result<std::vector<WatchEventPtr>> LoadHistory(sqlite3* db, uint64_t revision, size_t capacity) {
  std::vector<WatchEventPtr> events;
  if (revision == 0) return events;
  const char* sql =
      "SELECT revision, type, resource, namespace, name, json FROM events "
      "WHERE revision > ?1 ORDER BY revision";
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "load watch history");
  const uint64_t from = revision > capacity ? revision - capacity : 0;
  sqlite3_bind_int64(stmt, 1, static_cast<int64_t>(from));
  Status status;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto event = std::make_shared<WatchEvent>();
    event->revision = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
    const int type = sqlite3_column_int(stmt, 1);
    if (type < 0 || type > 2) {
      status = Status::Corruption("sqlite: event " + std::to_string(event->revision) +
                                  " has unknown type " + std::to_string(type));
      break;
    }
    event->type = static_cast<WatchEventType>(type);
    event->key = ObjectKey{ColumnText(stmt, 2), ColumnText(stmt, 3), ColumnText(stmt, 4)};
    Result<nlohmann::json> object = ParseStored(ColumnText(stmt, 5), event->key);
    if (!object.ok()) {
      status = object.status();
      break;
    }
    event->object = std::make_shared<const nlohmann::json>(std::move(*object));
    if (!events.empty() && event->revision != events.back()->revision + 1) events.clear();
    events.push_back(std::move(event));
  }
  sqlite3_finalize(stmt);
  if (!status.ok()) return status;
  if (rc != SQLITE_DONE) return SqliteError(db, rc, "load watch history");
  if (!events.empty() && events.back()->revision != revision) events.clear();
  return events;
}

}  // namespace

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(const SqliteStorageOptions& options) {
  sqlite3* db = nullptr;
  // NOMUTEX: the connection is used under mu_ only.
  const int rc =
      sqlite3_open_v2(options.path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteError(db, rc, "open " + options.path);
    sqlite3_close(db);
    return status;
  }
  Result<uint64_t> revision = InitDatabase(db, options.synchronous_full);
  auto statements = std::make_unique<Statements>();
  Status status = revision.ok() ? statements->Prepare(db) : revision.status();
  if (!status.ok()) {
    statements.reset();
    sqlite3_close(db);
    return status.WithContext(options.path);
  }
  Result<std::vector<WatchEventPtr>> history =
      LoadHistory(db, *revision, options.watch.history_capacity);
  if (!history.ok()) {
    statements.reset();
    sqlite3_close(db);
    return history.status().WithContext(options.path);
  }
  return std::unique_ptr<SqliteStorage>(
      new SqliteStorage(db, std::move(statements), *revision, options.watch, std::move(*history)));
}

SqliteStorage::SqliteStorage(sqlite3* db, std::unique_ptr<Statements> statements, uint64_t revision,
                             const WatchHubOptions& watch, std::vector<WatchEventPtr> history)
    : db_(db),
      statements_(std::move(statements)),
      revision_(revision),
      history_capacity_(watch.history_capacity),
      hub_(watch, revision, std::move(history)) {}

SqliteStorage::~SqliteStorage() {
  std::lock_guard<std::mutex> lock(mu_);
  statements_.reset();  // Finalized first: sqlite3_close refuses while statements remain.
  sqlite3_close(db_);
}

Result<std::optional<std::pair<uint64_t, std::string>>> SqliteStorage::ReadLocked(
    const ObjectKey& key) {
  sqlite3_stmt* stmt = statements_->get;
  StatementScope scope(stmt);
  BindKey(stmt, key);
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_DONE) return std::optional<std::pair<uint64_t, std::string>>();
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read " + key.ToString());
  return std::optional<std::pair<uint64_t, std::string>>(
      std::pair(static_cast<uint64_t>(sqlite3_column_int64(stmt, 0)), ColumnText(stmt, 1)));
}

Result<Stored> SqliteStorage::Write(WriteKind kind, const ObjectKey& key,
                                    std::optional<nlohmann::json> object,
                                    std::optional<uint64_t> expected_revision) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  if (revision_ >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::Internal("revision counter exhausted");
  }
  const uint64_t revision = revision_ + 1;
  Transaction txn(db_, statements_->begin, statements_->commit, statements_->rollback);
  SLUICE_RETURN_IF_ERROR(txn.status());
  SLUICE_ASSIGN_OR_RETURN(auto existing, ReadLocked(key));
  if (kind == WriteKind::kCreate) {
    if (existing.has_value()) return storage_internal::AlreadyExistsError(key);
  } else {
    if (!existing.has_value()) return storage_internal::NotFoundError(key);
    if (expected_revision.has_value() && *expected_revision != existing->first) {
      return kind == WriteKind::kUpdate
                 ? storage_internal::UpdateConflictError(key)
                 : storage_internal::DeleteConflictError(key, *expected_revision, existing->first);
    }
  }
  if (kind == WriteKind::kDelete) {
    SLUICE_ASSIGN_OR_RETURN(object, ParseStored(existing->second, key));
    sqlite3_stmt* stmt = statements_->remove;
    BindKey(stmt, key);
    SLUICE_RETURN_IF_ERROR(StepStatement(db_, stmt, "delete " + key.ToString()));
  }
  SLUICE_RETURN_IF_ERROR(StampRevision(*object, revision));
  if (kind != WriteKind::kDelete) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, Serialize(*object));
    sqlite3_stmt* stmt = kind == WriteKind::kCreate ? statements_->insert : statements_->update;
    BindKey(stmt, key);
    sqlite3_bind_int64(stmt, 4, static_cast<int64_t>(revision));
    BindText(stmt, 5, text);
    SLUICE_RETURN_IF_ERROR(StepStatement(db_, stmt, "write " + key.ToString()));
  }
  sqlite3_bind_int64(statements_->set_revision, 1, static_cast<int64_t>(revision));
  SLUICE_RETURN_IF_ERROR(StepStatement(db_, statements_->set_revision, "set revision"));
  const WatchEventType type = kind == WriteKind::kCreate   ? WatchEventType::kAdded
                              : kind == WriteKind::kUpdate ? WatchEventType::kModified
                                                           : WatchEventType::kDeleted;
  {
    // The watch history survives restarts: the same transaction records the event and drops
    // the one that left the ring's window.
    SLUICE_ASSIGN_OR_RETURN(std::string text, Serialize(*object));
    sqlite3_stmt* stmt = statements_->insert_event;
    sqlite3_bind_int64(stmt, 1, static_cast<int64_t>(revision));
    sqlite3_bind_int(stmt, 2, static_cast<int>(type));
    BindText(stmt, 3, key.resource);
    BindText(stmt, 4, key.ns);
    BindText(stmt, 5, key.name);
    BindText(stmt, 6, text);
    SLUICE_RETURN_IF_ERROR(StepStatement(db_, stmt, "record event"));
    if (revision > history_capacity_) {
      sqlite3_bind_int64(statements_->trim_events, 1,
                         static_cast<int64_t>(revision - history_capacity_));
      SLUICE_RETURN_IF_ERROR(StepStatement(db_, statements_->trim_events, "trim events"));
    }
  }
  SLUICE_RETURN_IF_ERROR(txn.Commit());
  revision_ = revision;

  auto event = std::make_shared<WatchEvent>();
  event->type = type;
  event->revision = revision;
  event->key = key;
  event->object = std::make_shared<const nlohmann::json>(*object);
  if (kind == WriteKind::kUpdate) {
    // The previous state, for selector transitions in watches (WatchEvent::prev_object).
    Result<nlohmann::json> prev = ParseStored(existing->second, key);
    if (prev.ok()) event->prev_object = std::make_shared<const nlohmann::json>(std::move(*prev));
  }
  hub_.Publish(event);
  return Stored{std::move(*object), revision};
}

Result<Stored> SqliteStorage::Create(const ObjectKey& key, nlohmann::json object) {
  return Write(WriteKind::kCreate, key, std::move(object), std::nullopt);
}

Result<Stored> SqliteStorage::Update(const ObjectKey& key, nlohmann::json object,
                                     std::optional<uint64_t> expected_revision) {
  return Write(WriteKind::kUpdate, key, std::move(object), expected_revision);
}

Result<Stored> SqliteStorage::Delete(const ObjectKey& key,
                                     std::optional<uint64_t> expected_revision) {
  return Write(WriteKind::kDelete, key, std::nullopt, expected_revision);
}

Result<Stored> SqliteStorage::Get(const ObjectKey& key) {
  SLUICE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  SLUICE_ASSIGN_OR_RETURN(auto existing, ReadLocked(key));
  if (!existing.has_value()) return storage_internal::NotFoundError(key);
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json object, ParseStored(existing->second, key));
  return Stored{std::move(object), existing->first};
}

Result<ListResult> SqliteStorage::List(const std::string& resource,
                                       const std::optional<std::string>& ns, size_t limit,
                                       const std::string& continue_token) {
  if (resource.empty()) return Status::InvalidArgument("resource must be set", "resource");
  storage_internal::ContinuePosition position;
  const bool continuing = !continue_token.empty();
  if (continuing) {
    SLUICE_ASSIGN_OR_RETURN(position,
                            storage_internal::DecodeContinue(continue_token, resource, ns));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ListResult result;
  result.revision = continuing ? position.list_revision : revision_;
  sqlite3_stmt* stmt = ns.has_value() ? statements_->list_namespace : statements_->list_all;
  StatementScope scope(stmt);
  BindText(stmt, 1, resource);
  if (ns.has_value()) {
    BindText(stmt, 2, *ns);
    BindText(stmt, 3, position.last_name);  // "" before the first page: every name is > "".
  } else {
    BindText(stmt, 2, position.last_ns);
    BindText(stmt, 3, position.last_name);
  }
  // One row more than the page tells whether another page follows.
  const int64_t fetch =
      limit == 0 || limit >= static_cast<size_t>(std::numeric_limits<int64_t>::max())
          ? -1
          : static_cast<int64_t>(limit) + 1;
  sqlite3_bind_int64(stmt, 4, fetch);
  ObjectKey key{resource, "", ""};
  while (true) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqliteError(db_, rc, "list " + resource);
    if (limit > 0 && result.items.size() == limit) {
      result.continue_token =
          storage_internal::EncodeContinue(resource, ns, {result.revision, key.ns, key.name});
      break;
    }
    key.ns = ColumnText(stmt, 0);
    key.name = ColumnText(stmt, 1);
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json object, ParseStored(ColumnText(stmt, 3), key));
    result.items.push_back(
        Stored{std::move(object), static_cast<uint64_t>(sqlite3_column_int64(stmt, 2))});
  }
  return result;
}

Result<std::unique_ptr<Watcher>> SqliteStorage::Watch(const std::string& resource,
                                                      const std::optional<std::string>& ns,
                                                      uint64_t from_revision) {
  return hub_.Watch(resource, ns, from_revision);
}

uint64_t SqliteStorage::CurrentRevision() {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}

}  // namespace sluice::apiserver
