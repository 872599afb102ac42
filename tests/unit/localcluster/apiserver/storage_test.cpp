// Tests of apiserver Storage: the same cases run against MemoryStorage and SqliteStorage, then
// SQLite-only cases for persistence and crash safety.
#include "localcluster/apiserver/storage.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <latch>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/apiserver/memory_storage.h"
#include "localcluster/apiserver/sqlite_storage.h"
#include "tests/support/temp_dir.h"

namespace sluice::apiserver {
namespace storage_test {

using nlohmann::json;
using std::chrono::seconds;

constexpr std::chrono::nanoseconds kNoWait{0};
// Only ever waited in full when a test is already failing: events are published before the
// write returns.
constexpr seconds kEventWait{10};

// A directory of this test's own, removed with everything in it.
class TempDir : public ::sluice::test_support::TempDir {
 public:
  TempDir() : ::sluice::test_support::TempDir("sluice_storage_test") {}
};

SqliteStorageOptions At(const std::string& path) {
  SqliteStorageOptions options;
  options.path = path;
  return options;
}

class MemoryBackend {
 public:
  std::unique_ptr<Storage> Open(const WatchHubOptions& watch) {
    return std::make_unique<MemoryStorage>(watch);
  }
};

class SqliteBackend {
 public:
  std::unique_ptr<Storage> Open(const WatchHubOptions& watch) {
    SqliteStorageOptions options = At(dir_.str() + "/store.db");
    options.watch = watch;
    Result<std::unique_ptr<SqliteStorage>> opened = SqliteStorage::Open(options);
    SLUICE_CHECK(opened.ok());
    return std::move(opened).value();
  }

 private:
  TempDir dir_;
};

json Pod(const std::string& ns, const std::string& name, int v = 0) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", {{"v", v}}}};
}

ObjectKey PodKey(const std::string& ns, const std::string& name) { return {"core/pods", ns, name}; }

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"]; }

template <typename Backend>
class ApiserverStorageTest : public ::testing::Test {
 protected:
  ApiserverStorageTest() { store_ = backend_.Open({}); }

  // Replaces the store with one using `watch` (for SQLite, the same file reopened).
  void Reopen(const WatchHubOptions& watch) {
    store_.reset();
    store_ = backend_.Open(watch);
  }

  Stored MustCreate(const ObjectKey& key, json object) {
    Result<Stored> created = store_->Create(key, std::move(object));
    SLUICE_CHECK(created.ok());
    return std::move(created).value();
  }

  Backend backend_;
  std::unique_ptr<Storage> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryBackend> ? "Memory" : "Sqlite";
  }
};
TYPED_TEST_SUITE(ApiserverStorageTest, Backends, BackendNames);

// The next event, failing the test (and returning null) when there is none.
WatchEventPtr NextEvent(Watcher& watcher) {
  WatchNext next = watcher.Next(kEventWait);
  EXPECT_EQ(next.kind, WatchNext::Kind::kEvent) << next.status.ToString();
  return next.event;
}

TYPED_TEST(ApiserverStorageTest, CreateThenGetReturnsObjectWithResourceVersion) {
  EXPECT_EQ(this->store_->CurrentRevision(), 0u);
  Result<Stored> created = this->store_->Create(PodKey("default", "web"), Pod("default", "web", 7));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->revision, 1u);
  EXPECT_EQ(Rv(created->object), "1");
  EXPECT_EQ(created->object["spec"]["v"], 7);

  Result<Stored> got = this->store_->Get(PodKey("default", "web"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->object, created->object);
  EXPECT_EQ(got->revision, 1u);
  EXPECT_EQ(this->store_->CurrentRevision(), 1u);
}

TYPED_TEST(ApiserverStorageTest, CreateOverExistingIsAlreadyExists) {
  this->MustCreate(PodKey("default", "web"), Pod("default", "web"));
  Result<Stored> again = this->store_->Create(PodKey("default", "web"), Pod("default", "web"));
  EXPECT_EQ(again.status(), Status::AlreadyExists("pods \"web\" already exists"));
  EXPECT_EQ(this->store_->CurrentRevision(), 1u);  // A failed write takes no revision.
  // Same name, other namespace or resource: different keys.
  EXPECT_TRUE(this->store_->Create(PodKey("other", "web"), Pod("other", "web")).ok());
  EXPECT_TRUE(this->store_->Create({"core/configmaps", "default", "web"}, json::object()).ok());
}

TYPED_TEST(ApiserverStorageTest, MissingObjectIsNotFound) {
  const ObjectKey key{"sluice.dev/rolloutpools", "default", "ghost"};
  const Status not_found = Status::NotFound("rolloutpools.sluice.dev \"ghost\" not found");
  EXPECT_EQ(this->store_->Get(key).status(), not_found);
  EXPECT_EQ(this->store_->Update(key, json::object(), std::nullopt).status(), not_found);
  EXPECT_EQ(this->store_->Delete(key, std::nullopt).status(), not_found);
  EXPECT_EQ(this->store_->CurrentRevision(), 0u);
}

TYPED_TEST(ApiserverStorageTest, RejectsEmptyKeysAndNonObjects) {
  EXPECT_EQ(this->store_->Create({"", "", "x"}, json::object()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store_->Create({"core/pods", "", ""}, json::object()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store_->Create(PodKey("a", "x"), json::array()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store_->Create(PodKey("a", "x"), json{{"metadata", 3}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->store_->CurrentRevision(), 0u);
}

TYPED_TEST(ApiserverStorageTest, UpdateChecksExpectedRevision) {
  const Stored v1 = this->MustCreate(PodKey("default", "web"), Pod("default", "web", 1));
  Result<Stored> v2 =
      this->store_->Update(PodKey("default", "web"), Pod("default", "web", 2), v1.revision);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->revision, 2u);
  EXPECT_EQ(Rv(v2->object), "2");

  Result<Stored> stale =
      this->store_->Update(PodKey("default", "web"), Pod("default", "web", 3), v1.revision);
  EXPECT_EQ(stale.status(),
            Status::Conflict("Operation cannot be fulfilled on pods \"web\": the object has been "
                             "modified; please apply your changes to the latest version and try "
                             "again"));
  EXPECT_EQ(this->store_->Get(PodKey("default", "web"))->object["spec"]["v"], 2);

  // Without a precondition the write always applies.
  Result<Stored> v3 =
      this->store_->Update(PodKey("default", "web"), Pod("default", "web", 3), std::nullopt);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->revision, 3u);
}

TYPED_TEST(ApiserverStorageTest, TwoWritersWithTheSameRevisionOneWins) {
  const Stored v1 = this->MustCreate(PodKey("default", "web"), Pod("default", "web"));
  for (int round = 0; round < 20; ++round) {
    const uint64_t base = this->store_->Get(PodKey("default", "web"))->revision;
    std::latch start(2);
    Status results[2];
    std::vector<std::thread> writers;
    for (int i = 0; i < 2; ++i) {
      writers.emplace_back([&, i] {
        start.arrive_and_wait();
        results[i] =
            this->store_->Update(PodKey("default", "web"), Pod("default", "web", i), base).status();
      });
    }
    for (std::thread& t : writers) t.join();
    const int wins = results[0].ok() + results[1].ok();
    EXPECT_EQ(wins, 1) << results[0].ToString() << " / " << results[1].ToString();
    for (const Status& s : results) {
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kConflict);
      }
    }
  }
  EXPECT_EQ(this->store_->CurrentRevision(), v1.revision + 20);
}

TYPED_TEST(ApiserverStorageTest, RevisionStrictlyIncreasesAcrossResources) {
  uint64_t last = 0;
  auto expect_next = [&](const Result<Stored>& r) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->revision, last + 1);
    EXPECT_EQ(Rv(r->object), std::to_string(r->revision));
    last = r->revision;
  };
  expect_next(this->store_->Create(PodKey("a", "p"), Pod("a", "p")));
  expect_next(this->store_->Create({"core/configmaps", "a", "p"}, json::object()));
  expect_next(this->store_->Create({"core/nodes", "", "n1"}, json::object()));
  expect_next(this->store_->Update(PodKey("a", "p"), Pod("a", "p", 1), std::nullopt));
  expect_next(this->store_->Create({"sluice.dev/rolloutpools", "a", "p"}, json::object()));
  expect_next(this->store_->Delete({"core/configmaps", "a", "p"}, std::nullopt));
  expect_next(this->store_->Create({"core/configmaps", "a", "p"}, json::object()));
  EXPECT_EQ(this->store_->CurrentRevision(), last);
  EXPECT_EQ(this->store_->Get({"core/nodes", "", "n1"})->revision, 3u);
}

TYPED_TEST(ApiserverStorageTest, DeleteReturnsLastStateAtTheDeleteRevision) {
  const Stored v1 = this->MustCreate(PodKey("default", "web"), Pod("default", "web", 5));
  Result<Stored> stale = this->store_->Delete(PodKey("default", "web"), v1.revision + 7);
  EXPECT_EQ(stale.status(),
            Status::Conflict("Operation cannot be fulfilled on pods \"web\": the ResourceVersion "
                             "in the precondition (8) does not match the ResourceVersion in "
                             "record (1). The object might have been modified"));
  Result<Stored> deleted = this->store_->Delete(PodKey("default", "web"), v1.revision);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->revision, 2u);
  EXPECT_EQ(Rv(deleted->object), "2");
  EXPECT_EQ(deleted->object["spec"]["v"], 5);
  EXPECT_EQ(this->store_->Get(PodKey("default", "web")).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(ApiserverStorageTest, GuaranteedUpdateRetriesOnConflict) {
  this->MustCreate(PodKey("default", "counter"), Pod("default", "counter", 0));
  constexpr int kThreads = 4;
  constexpr int kIncrements = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        Result<Stored> r = this->store_->GuaranteedUpdate(
            PodKey("default", "counter"), [](const json& current) -> Result<json> {
              json next = current;
              next["spec"]["v"] = current["spec"]["v"].get<int>() + 1;
              return next;
            });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  Result<Stored> final_state = this->store_->Get(PodKey("default", "counter"));
  EXPECT_EQ(final_state->object["spec"]["v"], kThreads * kIncrements);
  EXPECT_EQ(final_state->revision, 1u + kThreads * kIncrements);

  // A no-op writes nothing; an error from fn is returned as is.
  const uint64_t before = this->store_->CurrentRevision();
  Result<Stored> same = this->store_->GuaranteedUpdate(
      PodKey("default", "counter"), [](const json& current) -> Result<json> { return current; });
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->revision, before);
  EXPECT_EQ(this->store_->CurrentRevision(), before);
  Result<Stored> refused = this->store_->GuaranteedUpdate(
      PodKey("default", "counter"),
      [](const json&) -> Result<json> { return Status::Unprocessable("no"); });
  EXPECT_EQ(refused.status(), Status::Unprocessable("no"));
  EXPECT_EQ(this->store_
                ->GuaranteedUpdate(PodKey("default", "none"),
                                   [](const json& c) -> Result<json> { return c; })
                .status()
                .code(),
            StatusCode::kNotFound);
}

TYPED_TEST(ApiserverStorageTest, ListIsSortedAndFiltersNamespace) {
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"b", "x"}, {"a", "y"}, {"a", "x"}, {"c", "a"}, {"b", "a"}}) {
    this->MustCreate(PodKey(ns, name), Pod(ns, name));
  }
  this->MustCreate({"core/configmaps", "a", "x"}, json::object());
  this->MustCreate({"core/podsx", "a", "x"}, json::object());  // Shares a prefix with core/pods.

  Result<ListResult> all = this->store_->List("core/pods", std::nullopt, 0, "");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> names;
  for (const Stored& s : all->items) {
    names.push_back(s.object["metadata"]["namespace"].get<std::string>() + "/" +
                    s.object["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a/x", "a/y", "b/a", "b/x", "c/a"}));
  EXPECT_EQ(all->revision, 7u);
  EXPECT_TRUE(all->continue_token.empty());

  Result<ListResult> in_b = this->store_->List("core/pods", "b", 0, "");
  ASSERT_TRUE(in_b.ok());
  ASSERT_EQ(in_b->items.size(), 2u);
  EXPECT_EQ(in_b->items[0].object["metadata"]["name"], "a");
  EXPECT_EQ(in_b->items[1].object["metadata"]["name"], "x");
  EXPECT_EQ(this->store_->List("core/pods", "zz", 0, "")->items.size(), 0u);
  EXPECT_EQ(this->store_->List("core/services", std::nullopt, 0, "")->items.size(), 0u);
}

TYPED_TEST(ApiserverStorageTest, ListPaginatesAcrossInserts) {
  for (int i = 0; i < 10; ++i) {
    const std::string name = "p" + std::to_string(i);
    this->MustCreate(PodKey("ns", name), Pod("ns", name));
  }
  for (const std::optional<std::string>& scope :
       {std::optional<std::string>(), std::optional<std::string>("ns")}) {
    const std::string suffix = scope.has_value() ? "-scoped" : "-all";
    std::multiset<std::string> seen;
    std::string token;
    uint64_t list_revision = 0;
    do {
      Result<ListResult> page = this->store_->List("core/pods", scope, 3, token);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      EXPECT_LE(page->items.size(), 3u);
      for (const Stored& s : page->items) seen.insert(s.object["metadata"]["name"]);
      if (token.empty()) {
        list_revision = page->revision;
        EXPECT_EQ(list_revision, this->store_->CurrentRevision());
        // Inserted behind the cursor (not seen) and ahead of it (seen).
        this->MustCreate(PodKey("ns", "a-behind" + suffix), Pod("ns", "a-behind" + suffix));
        this->MustCreate(PodKey("ns", "z-ahead" + suffix), Pod("ns", "z-ahead" + suffix));
      } else {
        EXPECT_EQ(page->revision, list_revision);  // Later pages repeat the first's revision.
      }
      token = page->continue_token;
    } while (!token.empty());
    for (int i = 0; i < 10; ++i) EXPECT_EQ(seen.count("p" + std::to_string(i)), 1u);
    EXPECT_EQ(seen.count("z-ahead" + suffix), 1u);
    EXPECT_EQ(seen.count("a-behind" + suffix), 0u);
  }
  // An exact multiple of the limit ends without an empty trailing page.
  Result<ListResult> exact = this->store_->List("core/pods", "ns", 14, "");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->items.size(), 14u);
  EXPECT_TRUE(exact->continue_token.empty());
}

TYPED_TEST(ApiserverStorageTest, RejectsBadContinueTokens) {
  this->MustCreate(PodKey("a", "x"), Pod("a", "x"));
  this->MustCreate(PodKey("a", "y"), Pod("a", "y"));
  Result<ListResult> page = this->store_->List("core/pods", "a", 1, "");
  ASSERT_TRUE(page.ok());
  ASSERT_FALSE(page->continue_token.empty());
  EXPECT_TRUE(this->store_->List("core/pods", "a", 1, page->continue_token).ok());
  for (const auto& [resource, ns, token] :
       std::vector<std::tuple<std::string, std::optional<std::string>, std::string>>{
           {"core/pods", "a", "!!!"},
           {"core/pods", "a", "eyJ2IjoxfQ"},  // {"v":1}
           {"core/configmaps", "a", page->continue_token},
           {"core/pods", "b", page->continue_token},
           {"core/pods", std::nullopt, page->continue_token},
       }) {
    Result<ListResult> bad = this->store_->List(resource, ns, 1, token);
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << token;
  }
}

TYPED_TEST(ApiserverStorageTest, WatchFromNowDeliversEachChange) {
  this->MustCreate(PodKey("default", "before"), Pod("default", "before"));
  Result<std::unique_ptr<Watcher>> watch = this->store_->Watch("core/pods", std::nullopt, 0);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  Watcher& w = **watch;
  EXPECT_EQ(w.Next(kNoWait).kind, WatchNext::Kind::kTimeout);

  const Stored created = this->MustCreate(PodKey("default", "web"), Pod("default", "web", 1));
  ASSERT_TRUE(
      this->store_->Update(PodKey("default", "web"), Pod("default", "web", 2), std::nullopt).ok());
  ASSERT_TRUE(this->store_->Delete(PodKey("default", "web"), std::nullopt).ok());

  WatchEventPtr added = NextEvent(w);
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->revision, created.revision);
  EXPECT_EQ(*added->object, created.object);
  EXPECT_EQ(added->key, PodKey("default", "web"));
  WatchEventPtr modified = NextEvent(w);
  ASSERT_NE(modified, nullptr);
  EXPECT_EQ(WatchEventTypeName(modified->type), "MODIFIED");
  EXPECT_EQ((*modified->object)["spec"]["v"], 2);
  WatchEventPtr deleted = NextEvent(w);
  ASSERT_NE(deleted, nullptr);
  EXPECT_EQ(deleted->type, WatchEventType::kDeleted);
  EXPECT_EQ(deleted->revision, created.revision + 2);
  EXPECT_EQ(Rv(*deleted->object), std::to_string(created.revision + 2));
  EXPECT_EQ((*deleted->object)["spec"]["v"], 2);
  EXPECT_EQ(w.Next(kNoWait).kind, WatchNext::Kind::kTimeout);
}

TYPED_TEST(ApiserverStorageTest, WatchFromPastRevisionReplaysThenFollows) {
  this->MustCreate(PodKey("a", "p1"), Pod("a", "p1"));                      // 1
  const Stored p2 = this->MustCreate(PodKey("a", "p2"), Pod("a", "p2"));    // 2
  this->MustCreate({"core/configmaps", "a", "c"}, json::object());          // 3
  this->MustCreate(PodKey("a", "p3"), Pod("a", "p3"));                      // 4
  ASSERT_TRUE(this->store_->Delete(PodKey("a", "p1"), std::nullopt).ok());  // 5

  Result<std::unique_ptr<Watcher>> watch =
      this->store_->Watch("core/pods", std::nullopt, p2.revision);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  this->MustCreate(PodKey("a", "p4"), Pod("a", "p4"));  // 6, live.
  std::vector<std::pair<uint64_t, WatchEventType>> got;
  for (int i = 0; i < 3; ++i) {
    WatchEventPtr e = NextEvent(**watch);
    ASSERT_NE(e, nullptr);
    got.emplace_back(e->revision, e->type);
  }
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, WatchEventType>>{{4, WatchEventType::kAdded},
                                                                   {5, WatchEventType::kDeleted},
                                                                   {6, WatchEventType::kAdded}}));
  EXPECT_EQ((*watch)->Next(kNoWait).kind, WatchNext::Kind::kTimeout);

  // From the very beginning: everything, 1 included.
  Result<std::unique_ptr<Watcher>> from_start = this->store_->Watch("core/pods", "a", 1);
  ASSERT_TRUE(from_start.ok());
  WatchEventPtr first = NextEvent(**from_start);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->revision, 2u);
}

TYPED_TEST(ApiserverStorageTest, WatchFromBeforeTheHistoryRingIsGone) {
  this->Reopen({.history_capacity = 5, .watcher_queue_capacity = 100});
  for (int i = 0; i < 10; ++i) {
    const std::string name = "p" + std::to_string(i);
    this->MustCreate(PodKey("a", name), Pod("a", name));
  }
  // Revisions 6..10 are kept: a watch may start from 5 or later.
  Result<std::unique_ptr<Watcher>> too_old = this->store_->Watch("core/pods", std::nullopt, 4);
  EXPECT_EQ(too_old.status(), Status::Gone("too old resource version: 4 (5)"));
  Result<std::unique_ptr<Watcher>> oldest = this->store_->Watch("core/pods", std::nullopt, 5);
  ASSERT_TRUE(oldest.ok()) << oldest.status().ToString();
  WatchEventPtr e = NextEvent(**oldest);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->revision, 6u);

  // A replay that falls behind the ring is closed with Gone: the client must relist.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(this->store_->Update(PodKey("a", "p0"), Pod("a", "p0", i), std::nullopt).ok());
  }
  WatchNext next = (*oldest)->Next(kNoWait);
  EXPECT_EQ(next.kind, WatchNext::Kind::kClosed);
  EXPECT_EQ(next.status.code(), StatusCode::kGone);
}

TYPED_TEST(ApiserverStorageTest, SlowWatcherIsClosedNotBuffered) {
  this->Reopen({.history_capacity = 100, .watcher_queue_capacity = 4});
  Result<std::unique_ptr<Watcher>> slow = this->store_->Watch("core/pods", std::nullopt, 0);
  Result<std::unique_ptr<Watcher>> fast = this->store_->Watch("core/pods", std::nullopt, 0);
  ASSERT_TRUE(slow.ok() && fast.ok());
  for (int i = 0; i < 10; ++i) {
    const std::string name = "p" + std::to_string(i);
    this->MustCreate(PodKey("a", name), Pod("a", name));
    WatchEventPtr e = NextEvent(**fast);  // Keeps up, so stays open.
    ASSERT_NE(e, nullptr);
  }
  WatchNext next = (*slow)->Next(kNoWait);
  EXPECT_EQ(next.kind, WatchNext::Kind::kClosed);
  EXPECT_EQ(next.status.code(), StatusCode::kUnavailable) << next.status.ToString();
  EXPECT_EQ((*slow)->Next(kNoWait).kind, WatchNext::Kind::kClosed);  // Stays closed.
  EXPECT_EQ((*fast)->Next(kNoWait).kind, WatchNext::Kind::kTimeout);
  // The slow client resumes from its last revision: still in the ring, so it catches up.
  Result<std::unique_ptr<Watcher>> resumed = this->store_->Watch("core/pods", std::nullopt, 1);
  ASSERT_TRUE(resumed.ok());
  int replayed = 0;
  while ((*resumed)->Next(kNoWait).kind == WatchNext::Kind::kEvent) ++replayed;
  EXPECT_EQ(replayed, 9);
}

TYPED_TEST(ApiserverStorageTest, WatchFiltersByResourceAndNamespace) {
  Result<std::unique_ptr<Watcher>> in_a = this->store_->Watch("core/pods", "a", 0);
  Result<std::unique_ptr<Watcher>> nodes = this->store_->Watch("core/nodes", "", 0);
  ASSERT_TRUE(in_a.ok() && nodes.ok());
  this->MustCreate(PodKey("b", "x"), Pod("b", "x"));
  this->MustCreate({"core/configmaps", "a", "x"}, json::object());
  this->MustCreate(PodKey("a", "x"), Pod("a", "x"));
  this->MustCreate({"core/nodes", "", "n1"}, json::object());
  WatchEventPtr e = NextEvent(**in_a);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->key, PodKey("a", "x"));
  EXPECT_EQ((*in_a)->Next(kNoWait).kind, WatchNext::Kind::kTimeout);
  e = NextEvent(**nodes);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->key, (ObjectKey{"core/nodes", "", "n1"}));
  EXPECT_EQ((*nodes)->Next(kNoWait).kind, WatchNext::Kind::kTimeout);
}

TYPED_TEST(ApiserverStorageTest, BookmarkRevisionCoversDeliveredEvents) {
  this->MustCreate(PodKey("a", "x"), Pod("a", "x"));
  Result<std::unique_ptr<Watcher>> watch = this->store_->Watch("core/pods", "a", 0);
  ASSERT_TRUE(watch.ok());
  Watcher& w = **watch;
  EXPECT_EQ(w.BookmarkRevision(), 1u);
  this->MustCreate({"core/configmaps", "a", "c"}, json::object());  // Not watched: advances.
  EXPECT_EQ(w.BookmarkRevision(), 2u);
  this->MustCreate(PodKey("a", "y"), Pod("a", "y"));  // 3, pending.
  this->MustCreate(PodKey("a", "z"), Pod("a", "z"));  // 4, pending.
  EXPECT_EQ(w.BookmarkRevision(), 2u);
  ASSERT_NE(NextEvent(w), nullptr);
  EXPECT_EQ(w.BookmarkRevision(), 3u);
  ASSERT_NE(NextEvent(w), nullptr);
  EXPECT_EQ(w.BookmarkRevision(), 4u);
  EXPECT_EQ(this->store_->CurrentRevision(), 4u);
}

TYPED_TEST(ApiserverStorageTest, StopAndCancelEndABlockedNext) {
  Result<std::unique_ptr<Watcher>> watch = this->store_->Watch("core/pods", std::nullopt, 0);
  ASSERT_TRUE(watch.ok());
  Watcher& w = **watch;

  CancellationSource source;
  WatchNext cancelled;
  std::thread waiter([&] { cancelled = w.Next(source.Token()); });
  source.Cancel();
  waiter.join();
  EXPECT_EQ(cancelled.kind, WatchNext::Kind::kCancelled);

  // Still usable after a cancelled Next.
  this->MustCreate(PodKey("a", "x"), Pod("a", "x"));
  ASSERT_NE(NextEvent(w), nullptr);

  WatchNext stopped;
  std::thread blocked([&] { stopped = w.Next(CancellationToken()); });
  w.Stop();
  blocked.join();
  EXPECT_EQ(stopped.kind, WatchNext::Kind::kClosed);
  EXPECT_EQ(stopped.status.code(), StatusCode::kCancelled);
}

TYPED_TEST(ApiserverStorageTest, WatcherOutlivingItsStorageIsClosed) {
  Result<std::unique_ptr<Watcher>> watch = this->store_->Watch("core/pods", std::nullopt, 0);
  ASSERT_TRUE(watch.ok());
  this->store_.reset();
  WatchNext next = (*watch)->Next(kNoWait);
  EXPECT_EQ(next.kind, WatchNext::Kind::kClosed);
  EXPECT_EQ(next.status.code(), StatusCode::kUnavailable);
}

TYPED_TEST(ApiserverStorageTest, ConcurrentWritersAndWatchersSeeEveryEventInOrder) {
  this->Reopen({.history_capacity = 10000, .watcher_queue_capacity = 10000});
  constexpr int kWriters = 4;
  constexpr int kOpsPerWriter = 150;
  constexpr int kWatchers = 3;
  // Each writer: create its object, then updates, then delete; all on one resource.
  constexpr uint64_t kTotal = kWriters * kOpsPerWriter;

  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < kWatchers; ++i) {
    Result<std::unique_ptr<Watcher>> w = this->store_->Watch("core/pods", std::nullopt, 0);
    ASSERT_TRUE(w.ok());
    watchers.push_back(std::move(w).value());
  }
  std::vector<std::vector<WatchEventPtr>> seen(kWatchers);
  std::vector<std::thread> readers;
  for (int i = 0; i < kWatchers; ++i) {
    readers.emplace_back([&, i] {
      while (seen[i].size() < kTotal) {
        WatchNext next = watchers[i]->Next(kEventWait);
        if (next.kind != WatchNext::Kind::kEvent) break;
        seen[i].push_back(next.event);
      }
    });
  }
  std::latch start(kWriters);
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      const std::string name = "w" + std::to_string(t);
      start.arrive_and_wait();
      EXPECT_TRUE(this->store_->Create(PodKey("a", name), Pod("a", name, 0)).ok());
      for (int i = 1; i < kOpsPerWriter - 1; ++i) {
        EXPECT_TRUE(this->store_->Update(PodKey("a", name), Pod("a", name, i), std::nullopt).ok());
      }
      EXPECT_TRUE(this->store_->Delete(PodKey("a", name), std::nullopt).ok());
    });
  }
  for (std::thread& t : writers) t.join();
  for (std::thread& t : readers) t.join();

  EXPECT_EQ(this->store_->CurrentRevision(), kTotal);
  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_EQ(seen[i].size(), kTotal) << "watcher " << i;
    std::map<std::string, int> last_v;
    for (uint64_t j = 0; j < kTotal; ++j) {
      const WatchEvent& e = *seen[i][j];
      EXPECT_EQ(e.revision, j + 1);  // Every revision, in order.
      const int v = (*e.object)["spec"]["v"];
      auto it = last_v.find(e.key.name);
      if (it == last_v.end()) {
        EXPECT_EQ(e.type, WatchEventType::kAdded);
        EXPECT_EQ(v, 0);
      } else if (e.type == WatchEventType::kModified) {
        EXPECT_EQ(v, it->second + 1);  // Per object, in write order.
      } else {
        EXPECT_EQ(e.type, WatchEventType::kDeleted);
        EXPECT_EQ(v, kOpsPerWriter - 2);
      }
      last_v[e.key.name] = v;
    }
  }
}

// SQLite only: persistence, ownership, crash safety.

class ApiserverStorageSqliteTest : public ::testing::Test {
 protected:
  std::string Path() const { return dir_.str() + "/store.db"; }
  std::unique_ptr<SqliteStorage> MustOpen() {
    Result<std::unique_ptr<SqliteStorage>> opened = SqliteStorage::Open(At(Path()));
    SLUICE_CHECK(opened.ok());
    return std::move(opened).value();
  }

  TempDir dir_;
};

TEST_F(ApiserverStorageSqliteTest, ReopenRestoresObjectsAndCounter) {
  {
    std::unique_ptr<SqliteStorage> store = MustOpen();
    ASSERT_TRUE(store->Create(PodKey("a", "x"), Pod("a", "x", 1)).ok());
    ASSERT_TRUE(store->Create({"core/nodes", "", "n1"}, json{{"k", "é"}}).ok());
    ASSERT_TRUE(store->Create(PodKey("a", "gone"), Pod("a", "gone")).ok());
    ASSERT_TRUE(store->Update(PodKey("a", "x"), Pod("a", "x", 2), 1).ok());
    ASSERT_TRUE(store->Delete(PodKey("a", "gone"), std::nullopt).ok());
    EXPECT_EQ(store->CurrentRevision(), 5u);
  }
  std::unique_ptr<SqliteStorage> store = MustOpen();
  EXPECT_EQ(store->CurrentRevision(), 5u);
  Result<Stored> x = store->Get(PodKey("a", "x"));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->revision, 4u);
  EXPECT_EQ(x->object, ([] {
              json pod = Pod("a", "x", 2);
              pod["metadata"]["resourceVersion"] = "4";
              return pod;
            }()));
  EXPECT_EQ(store->Get({"core/nodes", "", "n1"})->object["k"], "é");
  EXPECT_EQ(store->Get(PodKey("a", "gone")).status().code(), StatusCode::kNotFound);
  // The counter continues, and so does the watch history: a watch from before the restart
  // resumes with the events it missed.
  EXPECT_EQ(store->Create(PodKey("a", "y"), Pod("a", "y"))->revision, 6u);
  Result<std::unique_ptr<Watcher>> resumed = store->Watch("core/pods", std::nullopt, 1);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  std::vector<std::pair<uint64_t, WatchEventType>> seen;
  while (WatchEventPtr e = NextEvent(**resumed)) {
    seen.emplace_back(e->revision, e->type);
    if (e->revision == 6) break;
  }
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, WatchEventType>>{{3, WatchEventType::kAdded},
                                                                    {4, WatchEventType::kModified},
                                                                    {5, WatchEventType::kDeleted},
                                                                    {6, WatchEventType::kAdded}}));
}

TEST_F(ApiserverStorageSqliteTest, ReopenKeepsOnlyTheConfiguredHistory) {
  SqliteStorageOptions options = At(Path());
  options.watch.history_capacity = 3;
  {
    Result<std::unique_ptr<SqliteStorage>> store = SqliteStorage::Open(options);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 8; ++i) {
      const std::string name = "p" + std::to_string(i);
      ASSERT_TRUE((*store)->Create(PodKey("a", name), Pod("a", name)).ok());
    }
  }
  Result<std::unique_ptr<SqliteStorage>> store = SqliteStorage::Open(options);
  ASSERT_TRUE(store.ok());
  // Revisions 6..8 are kept (the table is trimmed in the same transactions).
  EXPECT_EQ((*store)->Watch("core/pods", std::nullopt, 4).status(),
            Status::Gone("too old resource version: 4 (5)"));
  Result<std::unique_ptr<Watcher>> oldest = (*store)->Watch("core/pods", std::nullopt, 5);
  ASSERT_TRUE(oldest.ok()) << oldest.status().ToString();
  WatchEventPtr e = NextEvent(**oldest);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->revision, 6u);
  EXPECT_EQ((*e->object)["metadata"]["name"], "p5");
}

TEST_F(ApiserverStorageSqliteTest, SecondOwnerIsRefused) {
  std::unique_ptr<SqliteStorage> first = MustOpen();
  Result<std::unique_ptr<SqliteStorage>> second = SqliteStorage::Open(At(Path()));
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
  first.reset();
  EXPECT_TRUE(SqliteStorage::Open(At(Path())).ok());
}

TEST_F(ApiserverStorageSqliteTest, NotADatabaseIsReported) {
  FILE* f = fopen(Path().c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("this is not an sqlite database, not even close; padding padding padding padding", f);
  fclose(f);
  Result<std::unique_ptr<SqliteStorage>> opened = SqliteStorage::Open(At(Path()));
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("sqlite"), std::string::npos);
  EXPECT_EQ(SqliteStorage::Open(At(dir_.str() + "/missing/dir/x.db")).status().code(),
            StatusCode::kInternal);
}

// The child: writes forever, reporting each committed revision on `fd`; never returns.
[[noreturn]] void WriteUntilKilled(const std::string& path, int fd, bool exit_midway) {
  Result<std::unique_ptr<SqliteStorage>> opened = SqliteStorage::Open(At(path));
  if (!opened.ok()) _exit(2);
  SqliteStorage& store = **opened;
  for (uint64_t i = 0;; ++i) {
    const std::string name = "o" + std::to_string(i % 50);
    const ObjectKey key{"core/configmaps", "ns", name};
    json object = {{"metadata", {{"name", name}, {"namespace", "ns"}}},
                   {"data", {{"payload", std::string(200 + i % 300, 'x')}, {"i", i}}}};
    Result<Stored> r =
        i % 7 == 6 ? store.Delete(key, std::nullopt) : store.Update(key, object, std::nullopt);
    if (!r.ok() && r.status().code() == StatusCode::kNotFound && i % 7 != 6) {
      r = store.Create(key, object);
    }
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) _exit(3);
    if (r.ok()) {
      const uint64_t rev = r->revision;
      if (write(fd, &rev, sizeof rev) != sizeof rev) _exit(4);
    }
    if (exit_midway && i == 3000) _exit(0);  // Without closing anything.
  }
}

TEST_F(ApiserverStorageSqliteTest, KilledWriterLeavesConsistentStore) {
  uint64_t previous_revision = 0;
  for (int round = 0; round < 4; ++round) {
    const bool exit_midway = round == 3;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      WriteUntilKilled(Path(), fds[1], exit_midway);
    }
    close(fds[1]);
    // Let it commit a round-dependent number of writes, then kill it mid-stream.
    const uint64_t kill_after = 200 + 350 * static_cast<uint64_t>(round);
    uint64_t committed = 0;
    uint64_t reports = 0;
    uint64_t rev = 0;
    while (read(fds[0], &rev, sizeof rev) == sizeof rev) {
      committed = rev;
      if (++reports == kill_after && !exit_midway) kill(child, SIGKILL);
    }
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    if (exit_midway) {
      ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
    } else {
      ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited early: " << wstatus;
    }
    ASSERT_GT(committed, previous_revision);

    Result<std::unique_ptr<SqliteStorage>> reopened = SqliteStorage::Open(At(Path()));
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();  // Checks counter >= objects.
    SqliteStorage& store = **reopened;
    // Every write reported as committed survived the kill.
    EXPECT_GE(store.CurrentRevision(), committed);
    Result<ListResult> all = store.List("core/configmaps", std::nullopt, 0, "");
    ASSERT_TRUE(all.ok()) << all.status().ToString();  // Every row parses.
    EXPECT_FALSE(all->items.empty());
    for (const Stored& s : all->items) {
      EXPECT_LE(s.revision, store.CurrentRevision());
      EXPECT_EQ(Rv(s.object), std::to_string(s.revision));
      EXPECT_EQ(s.object["data"]["payload"].get<std::string>().size(),
                200 + s.object["data"]["i"].get<uint64_t>() % 300);
    }
    previous_revision = store.CurrentRevision();
  }
}

}  // namespace storage_test
}  // namespace sluice::apiserver
