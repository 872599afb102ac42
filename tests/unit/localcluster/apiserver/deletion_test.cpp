// Tests of DELETE semantics (deletion.h): immediate and pending deletion, finalizers,
// propagation finalizers, Pod grace periods, Namespaces, preconditions, dry run, and the parsing
// of DeleteOptions.
#include "localcluster/apiserver/deletion.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/apiserver/memory_storage.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class DeletionTest : public ::testing::Test {
 protected:
  const ResourceInfo& Info(const char* kind) {
    const ResourceInfo* info = registry_.FindByKind("v1", kind);
    SLUICE_CHECK(info != nullptr);
    return *info;
  }

  ObjectKey Key(const char* kind, const std::string& ns, const std::string& name) {
    return {StorageResourceKey(Info(kind)), ns, name};
  }

  // Stores an object of `kind` with a uid; `extra` is merged over it.
  Stored Create(const char* kind, const std::string& ns, const std::string& name,
                const json& extra = json::object()) {
    json object = {{"apiVersion", "v1"},
                   {"kind", kind},
                   {"metadata", {{"name", name}, {"uid", "uid-" + name}}}};
    if (!ns.empty()) object["metadata"]["namespace"] = ns;
    object.merge_patch(extra);
    Result<Stored> stored = store_.Create(Key(kind, ns, name), object);
    SLUICE_CHECK(stored.ok());
    return *stored;
  }

  Result<DeleteOutcome> Delete(const char* kind, const std::string& ns, const std::string& name,
                               const DeleteOptions& options = {}) {
    return DeleteObject(store_, Info(kind), Key(kind, ns, name), options, clock_.WallNow());
  }

  bool Exists(const char* kind, const std::string& ns, const std::string& name) {
    return store_.Get(Key(kind, ns, name)).ok();
  }

  json StoredObject(const char* kind, const std::string& ns, const std::string& name) {
    Result<Stored> stored = store_.Get(Key(kind, ns, name));
    SLUICE_CHECK(stored.ok());
    return stored->object;
  }

  ResourceRegistry registry_ = ResourceRegistry::WithBuiltins();
  MemoryStorage store_;
  FakeClock clock_;  // 2026-01-01T00:00:00Z.
};

TEST_F(DeletionTest, ObjectWithoutFinalizersIsRemovedAtOnce) {
  Create("ConfigMap", "ns", "cm", {{"data", {{"k", "v"}}}});
  Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "cm");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->finished);
  EXPECT_EQ(out->object["data"]["k"], "v");
  EXPECT_EQ(out->object["metadata"]["resourceVersion"], std::to_string(store_.CurrentRevision()));
  EXPECT_FALSE(Exists("ConfigMap", "ns", "cm"));
  EXPECT_EQ(DeleteHttpStatus({}, *out), 200);

  Result<DeleteOutcome> again = Delete("ConfigMap", "ns", "cm");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(again.status().message(), "configmaps \"cm\" not found");
}

TEST_F(DeletionTest, FinalizersKeepTheObjectMarkedUntilRemoved) {
  Create("ConfigMap", "ns", "cm",
         {{"metadata", {{"finalizers", {"example.com/hold"}}, {"generation", 3}}}});
  Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "cm");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(out->object["metadata"]["generation"], 4);
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"example.com/hold"}));
  EXPECT_EQ(StoredObject("ConfigMap", "ns", "cm"), out->object);
  EXPECT_EQ(DeleteHttpStatus({}, *out), 200);
  DeleteOptions cascade;
  cascade.orphan_dependents = false;  // The deprecated option that makes kube answer 202.
  EXPECT_EQ(DeleteHttpStatus(cascade, *out), 202);

  // Deleting again changes nothing, even later: the timestamp does not move.
  const uint64_t revision = store_.CurrentRevision();
  clock_.Advance(seconds(90));
  Result<DeleteOutcome> again = Delete("ConfigMap", "ns", "cm");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->finished);
  EXPECT_EQ(again->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(store_.CurrentRevision(), revision);

  // An update that keeps a finalizer does not remove it.
  Result<Stored> held =
      store_.GuaranteedUpdate(Key("ConfigMap", "ns", "cm"), [](const json& cur) -> Result<json> {
        json next = cur;
        next["metadata"]["finalizers"] = {"example.com/hold", "example.com/other"};
        return next;
      });
  ASSERT_TRUE(held.ok());
  Result<Stored> kept = CompleteDeletionIfReady(store_, Key("ConfigMap", "ns", "cm"), *held);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->revision, held->revision);
  EXPECT_TRUE(Exists("ConfigMap", "ns", "cm"));

  // Removing the last finalizer, then CompleteDeletionIfReady, removes it.
  Result<Stored> released =
      store_.GuaranteedUpdate(Key("ConfigMap", "ns", "cm"), [](const json& cur) -> Result<json> {
        json next = cur;
        next["metadata"].erase("finalizers");
        return next;
      });
  ASSERT_TRUE(released.ok());
  EXPECT_TRUE(Exists("ConfigMap", "ns", "cm"));
  Result<Stored> removed = CompleteDeletionIfReady(store_, Key("ConfigMap", "ns", "cm"), *released);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_GT(removed->revision, released->revision);
  EXPECT_EQ(removed->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_FALSE(Exists("ConfigMap", "ns", "cm"));
}

TEST_F(DeletionTest, CompleteDeletionIfReadyLeavesOtherObjectsAlone) {
  const Stored plain = Create("ConfigMap", "ns", "plain");
  Result<Stored> same = CompleteDeletionIfReady(store_, Key("ConfigMap", "ns", "plain"), plain);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->object, plain.object);
  EXPECT_TRUE(Exists("ConfigMap", "ns", "plain"));

  // A Pod in its grace period waits for its grace-0 delete even without finalizers.
  Create("Pod", "ns", "p", {{"spec", {{"nodeName", "n1"}}}});
  ASSERT_TRUE(Delete("Pod", "ns", "p").ok());
  const Stored graceful = *store_.Get(Key("Pod", "ns", "p"));
  ASSERT_TRUE(CompleteDeletionIfReady(store_, Key("Pod", "ns", "p"), graceful).ok());
  EXPECT_TRUE(Exists("Pod", "ns", "p"));

  // A terminating Namespace waits for spec.finalizers.
  Create("Namespace", "", "team", {{"spec", {{"finalizers", {"kubernetes"}}}}});
  ASSERT_TRUE(Delete("Namespace", "", "team").ok());
  const Stored terminating = *store_.Get(Key("Namespace", "", "team"));
  ASSERT_TRUE(CompleteDeletionIfReady(store_, Key("Namespace", "", "team"), terminating).ok());
  EXPECT_TRUE(Exists("Namespace", "", "team"));
}

TEST_F(DeletionTest, CompleteDeletionIfReadyRereadsAfterAConcurrentWrite) {
  Create("ConfigMap", "ns", "cm", {{"metadata", {{"finalizers", {"a"}}}}});
  ASSERT_TRUE(Delete("ConfigMap", "ns", "cm").ok());
  Result<Stored> released =
      store_.GuaranteedUpdate(Key("ConfigMap", "ns", "cm"), [](const json& cur) -> Result<json> {
        json next = cur;
        next["metadata"].erase("finalizers");
        return next;
      });
  ASSERT_TRUE(released.ok());
  // Another writer adds a label before we complete: the delete must still happen.
  ASSERT_TRUE(store_
                  .GuaranteedUpdate(Key("ConfigMap", "ns", "cm"),
                                    [](const json& cur) -> Result<json> {
                                      json next = cur;
                                      next["metadata"]["labels"] = {{"x", "y"}};
                                      return next;
                                    })
                  .ok());
  Result<Stored> removed = CompleteDeletionIfReady(store_, Key("ConfigMap", "ns", "cm"), *released);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->object["metadata"]["labels"]["x"], "y");
  EXPECT_FALSE(Exists("ConfigMap", "ns", "cm"));
}

TEST_F(DeletionTest, PropagationPoliciesSetKubesFinalizers) {
  Create("ConfigMap", "ns", "fg", {{"metadata", {{"finalizers", {"x/keep"}}}}});
  DeleteOptions foreground;
  foreground.propagation = Propagation::kForeground;
  Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "fg", foreground);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"x/keep", "foregroundDeletion"}));
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");

  // No policy on a later delete keeps the object's own; an explicit one replaces it, and the
  // deletion timestamp stays where it was.
  clock_.Advance(seconds(10));
  ASSERT_TRUE(Delete("ConfigMap", "ns", "fg").ok());
  EXPECT_EQ(StoredObject("ConfigMap", "ns", "fg")["metadata"]["finalizers"],
            json({"x/keep", "foregroundDeletion"}));
  DeleteOptions orphan;
  orphan.propagation = Propagation::kOrphan;
  out = Delete("ConfigMap", "ns", "fg", orphan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"x/keep", "orphan"}));
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  DeleteOptions background;
  background.propagation = Propagation::kBackground;
  out = Delete("ConfigMap", "ns", "fg", background);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"x/keep"}));

  // An object without finalizers is kept when a policy adds one.
  Create("ConfigMap", "ns", "orphaned");
  out = Delete("ConfigMap", "ns", "orphaned", orphan);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"orphan"}));
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_TRUE(Exists("ConfigMap", "ns", "orphaned"));

  // orphanDependents=true acts as Orphan.
  Create("ConfigMap", "ns", "legacy");
  DeleteOptions legacy;
  legacy.orphan_dependents = true;
  out = Delete("ConfigMap", "ns", "legacy", legacy);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"orphan"}));

  // A deleted object whose last finalizer is removed goes on the next delete (kube's recovery).
  Create("ConfigMap", "ns", "stuck", {{"metadata", {{"finalizers", {"a"}}}}});
  ASSERT_TRUE(Delete("ConfigMap", "ns", "stuck").ok());
  ASSERT_TRUE(store_
                  .GuaranteedUpdate(Key("ConfigMap", "ns", "stuck"),
                                    [](const json& cur) -> Result<json> {
                                      json next = cur;
                                      next["metadata"].erase("finalizers");
                                      return next;
                                    })
                  .ok());
  out = Delete("ConfigMap", "ns", "stuck");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);
  EXPECT_FALSE(Exists("ConfigMap", "ns", "stuck"));
}

TEST_F(DeletionTest, PreconditionsMustMatch) {
  const Stored cm = Create("ConfigMap", "ns", "cm");
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "other";
  Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "cm", wrong_uid);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kConflict);
  EXPECT_EQ(out.status().message(),
            "Operation cannot be fulfilled on configmaps \"cm\": Precondition failed: UID in "
            "precondition: other, UID in object meta: uid-cm");

  DeleteOptions wrong_rv;
  wrong_rv.precondition_resource_version = "999";
  out = Delete("ConfigMap", "ns", "cm", wrong_rv);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kConflict);
  EXPECT_EQ(out.status().message(),
            "Operation cannot be fulfilled on configmaps \"cm\": Precondition failed: "
            "ResourceVersion in precondition: 999, ResourceVersion in object meta: " +
                std::to_string(cm.revision));
  EXPECT_TRUE(Exists("ConfigMap", "ns", "cm"));

  DeleteOptions right;
  right.precondition_uid = "uid-cm";
  right.precondition_resource_version = std::to_string(cm.revision);
  out = Delete("ConfigMap", "ns", "cm", right);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->finished);

  // Namespaces check them too.
  Create("Namespace", "", "team");
  out = Delete("Namespace", "", "team", wrong_uid);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kConflict);
  EXPECT_NE(out.status().message().find("Precondition failed: UID in precondition: other"),
            std::string::npos);
}

TEST_F(DeletionTest, DryRunWritesNothing) {
  Create("ConfigMap", "ns", "cm");
  Create("ConfigMap", "ns", "held", {{"metadata", {{"finalizers", {"a"}}}}});
  Create("Pod", "ns", "p", {{"spec", {{"nodeName", "n1"}}}});
  Create("Namespace", "", "team", {{"spec", {{"finalizers", {"kubernetes"}}}}});
  const uint64_t revision = store_.CurrentRevision();
  const json held_before = StoredObject("ConfigMap", "ns", "held");
  DeleteOptions dry;
  dry.dry_run = true;

  Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "cm", dry);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);
  EXPECT_EQ(out->object["metadata"]["name"], "cm");
  out = Delete("ConfigMap", "ns", "held", dry);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  out = Delete("Pod", "ns", "p", dry);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 30);
  out = Delete("Namespace", "", "team", dry);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["status"]["phase"], "Terminating");

  EXPECT_EQ(store_.CurrentRevision(), revision);
  EXPECT_TRUE(Exists("ConfigMap", "ns", "cm"));
  EXPECT_EQ(StoredObject("ConfigMap", "ns", "held"), held_before);
  EXPECT_FALSE(StoredObject("Pod", "ns", "p")["metadata"].contains("deletionTimestamp"));
  EXPECT_FALSE(StoredObject("Namespace", "", "team").contains("status"));
}

TEST_F(DeletionTest, PodsOnANodeGetAGracePeriod) {
  Create("Pod", "ns", "default", {{"spec", {{"nodeName", "n1"}}}});
  Result<DeleteOutcome> out = Delete("Pod", "ns", "default");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_TRUE(Exists("Pod", "ns", "default"));

  Create("Pod", "ns", "spec",
         {{"spec", {{"nodeName", "n1"}, {"terminationGracePeriodSeconds", 7}}}});
  out = Delete("Pod", "ns", "spec");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:07Z");
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 7);

  Create("Pod", "ns", "opt",
         {{"spec", {{"nodeName", "n1"}, {"terminationGracePeriodSeconds", 7}}}});
  DeleteOptions five;
  five.grace_period_seconds = 5;
  out = Delete("Pod", "ns", "opt", five);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 5);

  // A running grace period may only be shortened, measured from when it started.
  clock_.Advance(seconds(2));
  const uint64_t revision = store_.CurrentRevision();
  out = Delete("Pod", "ns", "default");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  out = Delete("Pod", "ns", "default", five);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(store_.CurrentRevision(), revision + 1);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:05Z");
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 5);
  DeleteOptions longer;
  longer.grace_period_seconds = 60;
  out = Delete("Pod", "ns", "default", longer);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 5);

  // The node agent's final delete, with grace 0, removes it.
  DeleteOptions now;
  now.grace_period_seconds = 0;
  out = Delete("Pod", "ns", "default", now);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);
  EXPECT_FALSE(Exists("Pod", "ns", "default"));

  // Negative grace means 1 second.
  Create("Pod", "ns", "neg", {{"spec", {{"nodeName", "n1"}}}});
  DeleteOptions negative;
  negative.grace_period_seconds = -5;
  out = Delete("Pod", "ns", "neg", negative);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 1);
}

TEST_F(DeletionTest, PodsWithoutGraceAreRemovedAtOnceUnlessFinalized) {
  Create("Pod", "ns", "unscheduled", {{"spec", {{"terminationGracePeriodSeconds", 30}}}});
  Result<DeleteOutcome> out = Delete("Pod", "ns", "unscheduled");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);

  Create("Pod", "ns", "done",
         {{"spec", {{"nodeName", "n1"}}}, {"status", {{"phase", "Succeeded"}}}});
  out = Delete("Pod", "ns", "done");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);

  Create("Pod", "ns", "zero",
         {{"spec", {{"nodeName", "n1"}, {"terminationGracePeriodSeconds", 0}}}});
  out = Delete("Pod", "ns", "zero");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);

  Create("Pod", "ns", "held", {{"metadata", {{"finalizers", {"a"}}}}});
  out = Delete("Pod", "ns", "held");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_TRUE(Exists("Pod", "ns", "held"));
}

TEST_F(DeletionTest, NamespacesTerminateInsteadOfGoing) {
  Create("Namespace", "", "team", {{"spec", {{"finalizers", {"kubernetes"}}}}});
  Result<DeleteOutcome> out = Delete("Namespace", "", "team");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(out->object["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(out->object["status"]["phase"], "Terminating");
  EXPECT_EQ(out->object["spec"]["finalizers"], json({"kubernetes"}));
  EXPECT_FALSE(out->object["metadata"].contains("finalizers"));
  EXPECT_EQ(StoredObject("Namespace", "", "team"), out->object);

  // Again: nothing changes while spec.finalizers is not empty.
  const uint64_t revision = store_.CurrentRevision();
  clock_.Advance(seconds(5));
  out = Delete("Namespace", "", "team");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->finished);
  EXPECT_EQ(store_.CurrentRevision(), revision);

  // Once finalized (the namespace controller's job), a delete removes it.
  ASSERT_TRUE(store_
                  .GuaranteedUpdate(Key("Namespace", "", "team"),
                                    [](const json& cur) -> Result<json> {
                                      json next = cur;
                                      next["spec"]["finalizers"] = json::array();
                                      return next;
                                    })
                  .ok());
  out = Delete("Namespace", "", "team");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->finished);
  EXPECT_FALSE(Exists("Namespace", "", "team"));

  // Propagation finalizers go on metadata.finalizers.
  Create("Namespace", "", "fg", {{"spec", {{"finalizers", {"kubernetes"}}}}});
  DeleteOptions foreground;
  foreground.propagation = Propagation::kForeground;
  out = Delete("Namespace", "", "fg", foreground);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->object["metadata"]["finalizers"], json({"foregroundDeletion"}));
}

TEST_F(DeletionTest, ConcurrentDeletesRemoveOnce) {
  Create("ConfigMap", "ns", "cm");
  std::atomic<int> finished{0}, not_found{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      Result<DeleteOutcome> out = Delete("ConfigMap", "ns", "cm");
      if (out.ok() && out->finished) ++finished;
      if (!out.ok() && out.status().code() == StatusCode::kNotFound) ++not_found;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(finished.load(), 1);
  EXPECT_EQ(not_found.load(), 3);
}

TEST(ParseDeleteOptionsTest, ReadsTheBody) {
  const json body = json::parse(R"({
    "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 10,
    "preconditions": {"uid": "u1", "resourceVersion": "42"},
    "propagationPolicy": "Foreground", "dryRun": ["All"]})");
  Result<DeleteOptions> options = ParseDeleteOptions(&body, {{"propagationPolicy", "Orphan"}});
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->propagation, Propagation::kForeground);  // The query is ignored.
  EXPECT_EQ(options->grace_period_seconds, 10);
  EXPECT_EQ(options->precondition_uid, "u1");
  EXPECT_EQ(options->precondition_resource_version, "42");
  EXPECT_TRUE(options->dry_run);
  EXPECT_FALSE(options->orphan_dependents.has_value());

  const json empty = json::object();
  options = ParseDeleteOptions(&empty, {});
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->propagation.has_value());
  EXPECT_FALSE(options->grace_period_seconds.has_value());
  EXPECT_FALSE(options->dry_run);

  const json legacy = {{"orphanDependents", false}, {"gracePeriodSeconds", nullptr}};
  options = ParseDeleteOptions(&legacy, {});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->orphan_dependents, false);
}

TEST(ParseDeleteOptionsTest, ReadsTheQueryWithoutABody) {
  const json null_body = nullptr;
  for (const json* body : {static_cast<const json*>(nullptr), &null_body}) {
    Result<DeleteOptions> options = ParseDeleteOptions(body, {{"propagationPolicy", "Orphan"},
                                                              {"gracePeriodSeconds", "-3"},
                                                              {"dryRun", "All"},
                                                              {"watch", "ignored"}});
    ASSERT_TRUE(options.ok()) << options.status().ToString();
    EXPECT_EQ(options->propagation, Propagation::kOrphan);
    EXPECT_EQ(options->grace_period_seconds, -3);
    EXPECT_TRUE(options->dry_run);
  }
  Result<DeleteOptions> options = ParseDeleteOptions(nullptr, {{"orphanDependents", "true"}});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->orphan_dependents, true);
}

TEST(ParseDeleteOptionsTest, ErrorsNameTheField) {
  struct Case {
    json body;  // null: use the query.
    QueryParams query;
    StatusCode code;
    std::string field;
    std::string message;  // Substring.
  };
  const std::vector<Case> cases = {
      {nullptr,
       {{"propagationPolicy", "Sometimes"}},
       StatusCode::kUnprocessable,
       "propagationPolicy",
       "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: "
       "\"Sometimes\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""},
      {{{"propagationPolicy", "foreground"}},
       {},
       StatusCode::kUnprocessable,
       "propagationPolicy",
       "Unsupported value: \"foreground\""},
      {nullptr,
       {{"gracePeriodSeconds", "soon"}},
       StatusCode::kInvalidArgument,
       "gracePeriodSeconds",
       "gracePeriodSeconds must be an integer: \"soon\""},
      {nullptr,
       {{"gracePeriodSeconds", "99999999999999999999"}},
       StatusCode::kInvalidArgument,
       "gracePeriodSeconds",
       "must be an integer"},
      {{{"gracePeriodSeconds", "5"}},
       {},
       StatusCode::kInvalidArgument,
       "gracePeriodSeconds",
       "gracePeriodSeconds must be an integer"},
      {{{"gracePeriodSeconds", 1.5}},
       {},
       StatusCode::kInvalidArgument,
       "gracePeriodSeconds",
       "must be an integer"},
      {nullptr,
       {{"dryRun", "Some"}},
       StatusCode::kUnprocessable,
       "dryRun",
       "dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\""},
      {{{"dryRun", "All"}}, {}, StatusCode::kInvalidArgument, "dryRun", "array of strings"},
      {{{"propagationPolicy", "Orphan"}, {"orphanDependents", true}},
       {},
       StatusCode::kUnprocessable,
       "propagationPolicy",
       "orphanDependents and deletionPropagation cannot be both set"},
      {nullptr,
       {{"orphanDependents", "maybe"}},
       StatusCode::kInvalidArgument,
       "orphanDependents",
       "orphanDependents must be true or false"},
      {{{"preconditions", {{"uid", 7}}}},
       {},
       StatusCode::kInvalidArgument,
       "preconditions.uid",
       "must be a string"},
      {{{"kind", "Pod"}},
       {},
       StatusCode::kInvalidArgument,
       "kind",
       "decoded object cannot be converted to DeleteOptions"},
      {json::array(), {}, StatusCode::kInvalidArgument, "body", "must be a JSON object"},
  };
  for (const Case& c : cases) {
    Result<DeleteOptions> options =
        ParseDeleteOptions(c.body.is_null() ? nullptr : &c.body, c.query);
    ASSERT_FALSE(options.ok()) << c.body.dump() << " " << c.message;
    EXPECT_EQ(options.status().code(), c.code) << options.status().ToString();
    EXPECT_EQ(options.status().field(), c.field) << options.status().ToString();
    EXPECT_NE(options.status().message().find(c.message), std::string::npos)
        << options.status().message();
  }
}

}  // namespace
}  // namespace sluice::apiserver
