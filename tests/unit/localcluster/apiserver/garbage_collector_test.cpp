// Tests of the garbage collector (garbage_collector.h): background, foreground and orphan
// propagation through ownerReferences, namespace termination, the Pod grace-period fallback,
// races with writers during a pass, and the background thread.
#include "localcluster/apiserver/garbage_collector.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/memory_storage.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Storage that runs a hook before each List (to fail it or to write during a pass).
class HookedStorage final : public Storage {
 public:
  explicit HookedStorage(Storage& inner) : inner_(inner) {}
  std::function<Status(const std::string& resource)> before_list;

  Result<Stored> Create(const ObjectKey& key, nlohmann::json object) override {
    return inner_.Create(key, std::move(object));
  }
  Result<Stored> Get(const ObjectKey& key) override { return inner_.Get(key); }
  Result<ListResult> List(const std::string& resource, const std::optional<std::string>& ns,
                          size_t limit, const std::string& continue_token) override {
    if (before_list) SLUICE_RETURN_IF_ERROR(before_list(resource));
    return inner_.List(resource, ns, limit, continue_token);
  }
  Result<Stored> Update(const ObjectKey& key, nlohmann::json object,
                        std::optional<uint64_t> expected_revision) override {
    return inner_.Update(key, std::move(object), expected_revision);
  }
  Result<Stored> Delete(const ObjectKey& key, std::optional<uint64_t> expected_revision) override {
    return inner_.Delete(key, expected_revision);
  }
  Result<std::unique_ptr<Watcher>> Watch(const std::string& resource,
                                         const std::optional<std::string>& ns,
                                         uint64_t from_revision) override {
    return inner_.Watch(resource, ns, from_revision);
  }
  uint64_t CurrentRevision() override { return inner_.CurrentRevision(); }

 private:
  Storage& inner_;
};

json Ref(const char* kind, const std::string& name, bool block = false) {
  json ref = {{"apiVersion", "v1"}, {"kind", kind}, {"name", name}, {"uid", "uid-" + name}};
  if (block) ref["blockOwnerDeletion"] = true;
  return ref;
}

class GarbageCollectorTest : public ::testing::Test {
 protected:
  GarbageCollectorTest() {
    options_.list_page_size = 2;  // Exercise pagination.
    gc_ = std::make_unique<GarbageCollector>(
        &hooked_, [this] { return Resources(); }, &clock_,
        log::Logger("gc-test", clock_,
                    [this](std::string_view line) {
                      std::lock_guard<std::mutex> lock(mu_);
                      lines_.emplace_back(line);
                    }),
        options_);
  }

  std::vector<ResourceInfo> Resources() {
    std::vector<ResourceInfo> out;
    for (const ResourceInfo* info : registry_.All()) {
      if (info->storage_version) out.push_back(*info);
    }
    return out;
  }

  const ResourceInfo& Info(const char* kind) {
    const ResourceInfo* info = registry_.FindByKind("v1", kind);
    SLUICE_CHECK(info != nullptr);
    return *info;
  }

  ObjectKey Key(const char* kind, const std::string& ns, const std::string& name) {
    return {StorageResourceKey(Info(kind)), ns, name};
  }

  // Stores an object with uid "uid-<name>" (names are unique across a test), owned by `owners`.
  void Create(const char* kind, const std::string& ns, const std::string& name,
              const std::vector<json>& owners = {}, const json& extra = json::object()) {
    json object = {{"apiVersion", "v1"},
                   {"kind", kind},
                   {"metadata", {{"name", name}, {"uid", "uid-" + name}}}};
    if (!ns.empty()) object["metadata"]["namespace"] = ns;
    if (!owners.empty()) object["metadata"]["ownerReferences"] = json(owners);
    object.merge_patch(extra);
    SLUICE_CHECK(store_.Create(Key(kind, ns, name), object).ok());
  }

  void Delete(const char* kind, const std::string& ns, const std::string& name,
              std::optional<Propagation> propagation = std::nullopt) {
    DeleteOptions options;
    options.propagation = propagation;
    Result<DeleteOutcome> out =
        DeleteObject(store_, Info(kind), Key(kind, ns, name), options, clock_.WallNow());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
  }

  bool Exists(const char* kind, const std::string& ns, const std::string& name) {
    return store_.Get(Key(kind, ns, name)).ok();
  }

  json Get(const char* kind, const std::string& ns, const std::string& name) {
    Result<Stored> stored = store_.Get(Key(kind, ns, name));
    SLUICE_CHECK(stored.ok());
    return stored->object;
  }

  void Pass() {
    Status status = gc_->RunOnce();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // Removes `finalizer` from metadata.finalizers as a controller would, then completes.
  void RemoveFinalizer(const char* kind, const std::string& ns, const std::string& name,
                       const std::string& finalizer) {
    Result<Stored> updated =
        store_.GuaranteedUpdate(Key(kind, ns, name), [&](const json& cur) -> Result<json> {
          json next = cur;
          json kept = json::array();
          for (const json& f : cur["metadata"]["finalizers"]) {
            if (f != finalizer) kept.push_back(f);
          }
          next["metadata"]["finalizers"] = kept;
          return next;
        });
    ASSERT_TRUE(updated.ok());
    ASSERT_TRUE(CompleteDeletionIfReady(store_, Key(kind, ns, name), *updated).ok());
  }

  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

  ResourceRegistry registry_ = ResourceRegistry::WithBuiltins();
  MemoryStorage store_;
  HookedStorage hooked_{store_};
  FakeClock clock_;
  GarbageCollectorOptions options_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::unique_ptr<GarbageCollector> gc_;
};

TEST_F(GarbageCollectorTest, BackgroundCascadeFollowsTheChainOnePassPerLevel) {
  Create("ConfigMap", "ns", "a");
  Create("Secret", "ns", "b", {Ref("ConfigMap", "a")});
  Create("Pod", "ns", "c", {Ref("Secret", "b")});
  Create("ConfigMap", "ns", "bystander");
  Create("ConfigMap", "ns", "other-child", {Ref("ConfigMap", "bystander")});

  Pass();  // Nothing is garbage yet.
  EXPECT_TRUE(Exists("Secret", "ns", "b"));
  EXPECT_TRUE(Exists("Pod", "ns", "c"));

  Delete("ConfigMap", "ns", "a", Propagation::kBackground);
  EXPECT_FALSE(Exists("ConfigMap", "ns", "a"));
  Pass();
  EXPECT_FALSE(Exists("Secret", "ns", "b"));
  EXPECT_TRUE(Exists("Pod", "ns", "c"));
  Pass();
  EXPECT_FALSE(Exists("Pod", "ns", "c"));
  EXPECT_TRUE(Exists("ConfigMap", "ns", "bystander"));
  EXPECT_TRUE(Exists("ConfigMap", "ns", "other-child"));
  EXPECT_EQ(gc_->passes(), 3u);
}

TEST_F(GarbageCollectorTest, DependentWithALiveOwnerStaysAndLosesTheDeadReference) {
  Create("ConfigMap", "ns", "a");
  Create("ConfigMap", "ns", "b");
  Create("Secret", "ns", "d", {Ref("ConfigMap", "a"), Ref("ConfigMap", "b")});
  Delete("ConfigMap", "ns", "a");
  Pass();
  Pass();
  ASSERT_TRUE(Exists("Secret", "ns", "d"));
  EXPECT_EQ(Get("Secret", "ns", "d")["metadata"]["ownerReferences"],
            json::array({Ref("ConfigMap", "b")}));

  Delete("ConfigMap", "ns", "b");
  Pass();
  EXPECT_FALSE(Exists("Secret", "ns", "d"));
}

TEST_F(GarbageCollectorTest, OwnersAreLookedUpInTheDependentsNamespaceOrClusterScope) {
  Create("ConfigMap", "elsewhere", "owner");
  Create("Node", "", "n1");
  Create("Secret", "ns", "cross-namespace", {Ref("ConfigMap", "owner")});
  Create("Secret", "ns", "node-owned", {Ref("Node", "n1")});
  Create("Secret", "ns", "no-uid", {{{"kind", "ConfigMap"}, {"name", "x"}}});
  Pass();
  EXPECT_FALSE(Exists("Secret", "ns", "cross-namespace"));
  EXPECT_TRUE(Exists("Secret", "ns", "node-owned"));
  EXPECT_TRUE(Exists("Secret", "ns", "no-uid"));  // Malformed references are never acted on.
}

TEST_F(GarbageCollectorTest, ForegroundOwnerWaitsForItsBlockingDependents) {
  Create("ConfigMap", "ns", "owner");
  Create("Secret", "ns", "d1", {Ref("ConfigMap", "owner", true)});
  Create("Secret", "ns", "d2", {Ref("ConfigMap", "owner", true)},
         {{"metadata", {{"finalizers", {"example.com/hold"}}}}});
  Delete("ConfigMap", "ns", "owner", Propagation::kForeground);
  ASSERT_TRUE(Exists("ConfigMap", "ns", "owner"));

  Pass();
  EXPECT_FALSE(Exists("Secret", "ns", "d1"));
  ASSERT_TRUE(Exists("Secret", "ns", "d2"));
  EXPECT_TRUE(Get("Secret", "ns", "d2")["metadata"].contains("deletionTimestamp"));
  for (int i = 0; i < 3; ++i) Pass();
  ASSERT_TRUE(Exists("ConfigMap", "ns", "owner"));
  const json owner = Get("ConfigMap", "ns", "owner");
  EXPECT_EQ(owner["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(owner["metadata"]["finalizers"], json({"foregroundDeletion"}));

  RemoveFinalizer("Secret", "ns", "d2", "example.com/hold");
  EXPECT_FALSE(Exists("Secret", "ns", "d2"));
  Pass();
  EXPECT_FALSE(Exists("ConfigMap", "ns", "owner"));
}

TEST_F(GarbageCollectorTest, ForegroundDoesNotWaitForNonBlockingOrMultiOwnedDependents) {
  Create("ConfigMap", "ns", "owner");
  Create("ConfigMap", "ns", "other");
  Create("Secret", "ns", "loose", {Ref("ConfigMap", "owner")},
         {{"metadata", {{"finalizers", {"example.com/hold"}}}}});
  Create("Secret", "ns", "shared", {Ref("ConfigMap", "owner", true), Ref("ConfigMap", "other")});
  Delete("ConfigMap", "ns", "owner", Propagation::kForeground);
  Pass();
  // The shared dependent keeps its other owner and lets go of this one; the loose one is being
  // deleted but does not block.
  ASSERT_TRUE(Exists("Secret", "ns", "shared"));
  EXPECT_EQ(Get("Secret", "ns", "shared")["metadata"]["ownerReferences"],
            json::array({Ref("ConfigMap", "other")}));
  EXPECT_TRUE(Get("Secret", "ns", "loose")["metadata"].contains("deletionTimestamp"));
  Pass();
  EXPECT_FALSE(Exists("ConfigMap", "ns", "owner"));
  EXPECT_TRUE(Exists("Secret", "ns", "loose"));  // Still held by its own finalizer.
}

TEST_F(GarbageCollectorTest, ForegroundCascadesLevelByLevel) {
  Create("ConfigMap", "ns", "a");
  Create("Secret", "ns", "b", {Ref("ConfigMap", "a", true)});
  Create("Pod", "ns", "c", {Ref("Secret", "b", true)});
  Delete("ConfigMap", "ns", "a", Propagation::kForeground);
  Pass();
  ASSERT_TRUE(Exists("Secret", "ns", "b"));
  EXPECT_EQ(Get("Secret", "ns", "b")["metadata"]["finalizers"], json({"foregroundDeletion"}));
  int passes = 1;
  while (Exists("ConfigMap", "ns", "a") && passes < 10) {
    // The owner never goes before its dependents.
    EXPECT_TRUE(Exists("Secret", "ns", "b") || !Exists("Pod", "ns", "c"));
    Pass();
    ++passes;
    EXPECT_TRUE(!Exists("Secret", "ns", "b") || Exists("ConfigMap", "ns", "a"));
    EXPECT_TRUE(!Exists("Pod", "ns", "c") || Exists("Secret", "ns", "b"));
  }
  EXPECT_FALSE(Exists("ConfigMap", "ns", "a"));
  EXPECT_FALSE(Exists("Secret", "ns", "b"));
  EXPECT_FALSE(Exists("Pod", "ns", "c"));
  EXPECT_LE(passes, 5);
}

TEST_F(GarbageCollectorTest, OrphanKeepsDependentsWithoutTheReference) {
  Create("ConfigMap", "ns", "owner");
  Create("ConfigMap", "ns", "other");
  Create("Secret", "ns", "d1", {Ref("ConfigMap", "owner", true)});
  Create("Secret", "ns", "d2", {Ref("ConfigMap", "owner"), Ref("ConfigMap", "other")});
  Delete("ConfigMap", "ns", "owner", Propagation::kOrphan);
  ASSERT_TRUE(Exists("ConfigMap", "ns", "owner"));
  Pass();
  EXPECT_FALSE(Exists("ConfigMap", "ns", "owner"));
  ASSERT_TRUE(Exists("Secret", "ns", "d1"));
  EXPECT_FALSE(Get("Secret", "ns", "d1")["metadata"].contains("ownerReferences"));
  EXPECT_EQ(Get("Secret", "ns", "d2")["metadata"]["ownerReferences"],
            json::array({Ref("ConfigMap", "other")}));
  Pass();
  EXPECT_TRUE(Exists("Secret", "ns", "d1"));
  EXPECT_TRUE(Exists("Secret", "ns", "d2"));
}

TEST_F(GarbageCollectorTest, NamespaceIsEmptiedThenRemoved) {
  Create("Namespace", "", "team", {}, {{"spec", {{"finalizers", {"kubernetes"}}}}});
  Create("Namespace", "", "other", {}, {{"spec", {{"finalizers", {"kubernetes"}}}}});
  Create("ConfigMap", "team", "cm1");
  Create("ConfigMap", "team", "cm2");
  Create("Secret", "team", "s");
  Create("Pod", "team", "unbound");
  Create("Pod", "team", "running", {}, {{"spec", {{"nodeName", "n1"}}}});
  Create("ConfigMap", "other", "cm1");
  Delete("Namespace", "", "team");

  Pass();
  EXPECT_FALSE(Exists("ConfigMap", "team", "cm1"));
  EXPECT_FALSE(Exists("ConfigMap", "team", "cm2"));
  EXPECT_FALSE(Exists("Secret", "team", "s"));
  EXPECT_FALSE(Exists("Pod", "team", "unbound"));
  ASSERT_TRUE(Exists("Pod", "team", "running"));  // In its grace period.
  EXPECT_EQ(Get("Pod", "team", "running")["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
  Pass();
  ASSERT_TRUE(Exists("Namespace", "", "team"));
  const json ns = Get("Namespace", "", "team");
  EXPECT_EQ(ns["status"]["phase"], "Terminating");
  EXPECT_EQ(ns["spec"]["finalizers"], json({"kubernetes"}));

  clock_.Advance(seconds(30));
  for (int i = 0; i < 2 && Exists("Namespace", "", "team"); ++i) Pass();
  EXPECT_FALSE(Exists("Pod", "team", "running"));
  EXPECT_FALSE(Exists("Namespace", "", "team"));
  EXPECT_TRUE(Exists("Namespace", "", "other"));
  EXPECT_TRUE(Exists("ConfigMap", "other", "cm1"));
}

TEST_F(GarbageCollectorTest, NamespaceWaitsForFinalizedContent) {
  Create("Namespace", "", "team", {}, {{"spec", {{"finalizers", {"kubernetes"}}}}});
  Create("ConfigMap", "team", "held", {}, {{"metadata", {{"finalizers", {"example.com/hold"}}}}});
  Delete("Namespace", "", "team");
  for (int i = 0; i < 3; ++i) Pass();
  ASSERT_TRUE(Exists("ConfigMap", "team", "held"));
  EXPECT_TRUE(Get("ConfigMap", "team", "held")["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(Exists("Namespace", "", "team"));

  RemoveFinalizer("ConfigMap", "team", "held", "example.com/hold");
  EXPECT_FALSE(Exists("ConfigMap", "team", "held"));
  Pass();
  EXPECT_FALSE(Exists("Namespace", "", "team"));
}

TEST_F(GarbageCollectorTest, FinalizersBlockRemovalAndAStuckObjectIsRepaired) {
  Create("ConfigMap", "ns", "held", {},
         {{"metadata", {{"finalizers", {"example.com/a", "example.com/b"}}}}});
  Delete("ConfigMap", "ns", "held");
  Pass();
  Pass();
  ASSERT_TRUE(Exists("ConfigMap", "ns", "held"));
  RemoveFinalizer("ConfigMap", "ns", "held", "example.com/a");
  EXPECT_TRUE(Exists("ConfigMap", "ns", "held"));
  Pass();
  EXPECT_TRUE(Exists("ConfigMap", "ns", "held"));

  // A writer that removes the last finalizer without completing: the next pass finishes it.
  ASSERT_TRUE(store_
                  .GuaranteedUpdate(Key("ConfigMap", "ns", "held"),
                                    [](const json& cur) -> Result<json> {
                                      json next = cur;
                                      next["metadata"].erase("finalizers");
                                      return next;
                                    })
                  .ok());
  EXPECT_TRUE(Exists("ConfigMap", "ns", "held"));
  Pass();
  EXPECT_FALSE(Exists("ConfigMap", "ns", "held"));
}

TEST_F(GarbageCollectorTest, PodsAreRemovedWhenTheirGracePeriodEnds) {
  Create("Pod", "ns", "p", {},
         {{"spec", {{"nodeName", "n1"}, {"terminationGracePeriodSeconds", 30}}}});
  Create("Pod", "ns", "held", {},
         {{"metadata", {{"finalizers", {"example.com/hold"}}}}, {"spec", {{"nodeName", "n1"}}}});
  Create("Pod", "ns", "alive", {}, {{"spec", {{"nodeName", "n1"}}}});
  Delete("Pod", "ns", "p");
  Delete("Pod", "ns", "held");
  Pass();
  EXPECT_TRUE(Exists("Pod", "ns", "p"));
  clock_.Advance(seconds(29));
  Pass();
  EXPECT_TRUE(Exists("Pod", "ns", "p"));
  clock_.Advance(seconds(1));
  Pass();
  EXPECT_FALSE(Exists("Pod", "ns", "p"));
  EXPECT_TRUE(Exists("Pod", "ns", "held"));  // Finalizers still block it.
  EXPECT_TRUE(Exists("Pod", "ns", "alive"));

  RemoveFinalizer("Pod", "ns", "held", "example.com/hold");
  EXPECT_TRUE(Exists("Pod", "ns", "held"));  // Updates do not cut a grace period short...
  Pass();
  EXPECT_FALSE(Exists("Pod", "ns", "held"));  // ...but it has passed.
}

TEST_F(GarbageCollectorTest, FailedListLeavesDependentsAlone) {
  Create("ConfigMap", "ns", "owner");
  Create("Secret", "ns", "owned", {Ref("ConfigMap", "owner")});
  Create("Secret", "ns", "orphan-of-gone", {Ref("ConfigMap", "gone")});
  hooked_.before_list = [](const std::string& resource) {
    return resource == "core/configmaps" ? Status::Unavailable("disk on fire") : Status::Ok();
  };
  Status status = gc_->RunOnce();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Exists("Secret", "ns", "owned"));
  EXPECT_TRUE(Exists("Secret", "ns", "orphan-of-gone"));
  bool logged = false;
  for (const std::string& line : Lines()) {
    logged |= line.find("\"level\":\"error\"") != std::string::npos &&
              line.find("disk on fire") != std::string::npos &&
              line.find("core/configmaps") != std::string::npos;
  }
  EXPECT_TRUE(logged);

  hooked_.before_list = nullptr;
  Pass();
  EXPECT_TRUE(Exists("Secret", "ns", "owned"));
  EXPECT_FALSE(Exists("Secret", "ns", "orphan-of-gone"));
}

TEST_F(GarbageCollectorTest, ObjectsWrittenDuringAPassAreNotJudgedOnIt) {
  // Configmaps are listed before secrets: an owner and its dependent created between the two
  // lists leave the dependent in the index and the owner out of it.
  bool done = false;
  hooked_.before_list = [&](const std::string& resource) {
    if (resource == "core/secrets" && !done) {
      done = true;
      Create("ConfigMap", "ns", "late-owner");
      Create("Secret", "ns", "late-child", {Ref("ConfigMap", "late-owner")});
    }
    return Status::Ok();
  };
  Pass();
  ASSERT_TRUE(done);
  EXPECT_TRUE(Exists("Secret", "ns", "late-child"));
  Pass();
  EXPECT_TRUE(Exists("Secret", "ns", "late-child"));
}

TEST_F(GarbageCollectorTest, ThreadRunsPassesOnKickAndStops) {
  options_.period = std::chrono::hours(1);
  gc_ = std::make_unique<GarbageCollector>(
      &hooked_, [this] { return Resources(); }, &clock_, log::Logger("gc-test"), options_);
  Create("ConfigMap", "ns", "owner");
  Create("Secret", "ns", "child", {Ref("ConfigMap", "owner")});
  gc_->Start();
  gc_->Start();  // No-op.
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (gc_->passes() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(gc_->passes(), 1u);
  Delete("ConfigMap", "ns", "owner");
  gc_->Kick();
  gc_->Kick();
  while (Exists("Secret", "ns", "child") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(Exists("Secret", "ns", "child"));
  const auto stop_started = std::chrono::steady_clock::now();
  gc_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, seconds(5));
  const uint64_t passes = gc_->passes();
  EXPECT_LE(passes, 4u);  // Two kicks coalesce; the hour-long period never elapses.
  gc_->Kick();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(gc_->passes(), passes);
  gc_->Stop();   // Idempotent.
  gc_->Start();  // Restartable; the destructor stops it.
}

}  // namespace
}  // namespace sluice::apiserver
