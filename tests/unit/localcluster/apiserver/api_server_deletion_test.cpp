// HTTP-level tests of deletion in the local API server (api_server.h): garbage collection of
// dependents (background and foreground), finalizers, namespace lifecycle, and a CRD's deletion
// taking its resources and discovery with it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/http/client.h"
#include "common/status.h"
#include "localcluster/apiserver/storage.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ConfigMap;
using api_server_testing::ExpectStatus;
using api_server_testing::kConfigMaps;
using api_server_testing::kRolloutPools;
using api_server_testing::RolloutPool;
using nlohmann::json;

// ---- Garbage collection -------------------------------------------------------------------

TEST_F(ApiServerTest, DependentsOfADeletedOwnerAreCollected) {
  StartServer();
  const json owner = MustCreate(kConfigMaps, ConfigMap("owner"));
  const std::string uid = owner.value("/metadata/uid"_json_pointer, "");
  ASSERT_FALSE(uid.empty());
  json dependent = ConfigMap("dependent");
  dependent["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "owner"}, {"uid", uid}}};
  MustCreate(kConfigMaps, dependent);
  MustCreate(kConfigMaps, ConfigMap("bystander"));

  // The owner alive, the dependent stays through several passes.
  ASSERT_TRUE(WaitForGcPasses(3));
  ASSERT_EQ(Get(std::string(kConfigMaps) + "/dependent").status, 200);

  ASSERT_EQ(Delete(std::string(kConfigMaps) + "/owner").status, 200);
  EXPECT_TRUE(Eventually([&] {
    return Get(std::string(kConfigMaps) + "/dependent").status == 404;
  })) << Get(std::string(kConfigMaps) + "/dependent").body;
  EXPECT_EQ(Get(std::string(kConfigMaps) + "/bystander").status, 200);
}

TEST_F(ApiServerTest, ForegroundDeletionWaitsForBlockingDependents) {
  StartServer();
  const json owner = MustCreate(kConfigMaps, ConfigMap("fg-owner"));
  json dependent = ConfigMap("fg-dependent");
  dependent["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                               {"kind", "ConfigMap"},
                                               {"name", "fg-owner"},
                                               {"uid", owner["metadata"]["uid"]},
                                               {"blockOwnerDeletion", true}}};
  dependent["metadata"]["finalizers"] = {"test.sluice.dev/hold"};
  MustCreate(kConfigMaps, dependent);
  const std::string owner_path = std::string(kConfigMaps) + "/fg-owner";
  const std::string dependent_path = std::string(kConfigMaps) + "/fg-dependent";

  const http::Response r = Delete(
      owner_path,
      {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Foreground"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json deleting = Body(r);
  EXPECT_TRUE(deleting.contains("/metadata/deletionTimestamp"_json_pointer)) << r.body;
  EXPECT_EQ(deleting.value("/metadata/finalizers"_json_pointer, json::array()),
            json::array({"foregroundDeletion"}));

  // The collector deletes the dependent, which its finalizer keeps; the owner waits for it.
  ASSERT_TRUE(Eventually([&] {
    return Body(Get(dependent_path)).contains("/metadata/deletionTimestamp"_json_pointer);
  }));
  ASSERT_TRUE(WaitForGcPasses(3));  // Several collector passes.
  const http::Response held = Get(owner_path);
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_TRUE(Body(held).contains("/metadata/deletionTimestamp"_json_pointer));

  // Releasing the dependent lets it go, and then the owner.
  const http::Response released = Patch(dependent_path, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(Get(dependent_path).status, 404);
  EXPECT_TRUE(Eventually([&] { return Get(owner_path).status == 404; })) << Get(owner_path).body;
}

// ---- Finalizers ---------------------------------------------------------------------------

TEST_F(ApiServerTest, FinalizersHoldDeletionUntilRemoved) {
  StartServer();
  json object = ConfigMap("held");
  object["metadata"]["finalizers"] = {"test.sluice.dev/cleanup"};
  MustCreate(kConfigMaps, object);
  const std::string path = std::string(kConfigMaps) + "/held";

  http::Response r = Delete(path);
  ASSERT_EQ(r.status, 200) << r.body;
  const json deleting = Body(r);
  EXPECT_TRUE(deleting.contains("/metadata/deletionTimestamp"_json_pointer)) << r.body;
  EXPECT_EQ(deleting.value("/metadata/deletionGracePeriodSeconds"_json_pointer, -1), 0);

  // Still there, marked, after collector passes.
  ASSERT_TRUE(WaitForGcPasses(3));
  r = Get(path);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Body(r).contains("/metadata/deletionTimestamp"_json_pointer));

  // No new finalizers on an object being deleted.
  r = Patch(path, {{"metadata",
                    {{"finalizers", {"test.sluice.dev/cleanup", "test.sluice.dev/another"}}}}});
  ExpectStatus(r, 422, "Invalid");
  EXPECT_NE(Body(r).value("message", "").find("no new finalizers"), std::string::npos) << r.body;

  // A DELETE whose precondition fails changes nothing.
  ExpectStatus(Delete(path, {{"kind", "DeleteOptions"},
                             {"apiVersion", "v1"},
                             {"preconditions", {{"uid", "not-the-uid"}}}}),
               409, "Conflict");

  // Other changes are still allowed; removing the last finalizer removes the object.
  r = Patch(path, {{"data", {{"k", "v"}}}});
  EXPECT_EQ(r.status, 200) << r.body;
  r = Patch(path, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  ExpectStatus(Get(path), 404, "NotFound");
}

// ---- Namespaces ---------------------------------------------------------------------------

TEST_F(ApiServerTest, NamespaceLifecycle) {
  StartServer();
  const http::Response missing = Post("/api/v1/namespaces/nowhere/configmaps", ConfigMap("lost"));
  ExpectStatus(missing, 404, "NotFound");
  EXPECT_NE(Body(missing).value("message", "").find("namespaces \"nowhere\" not found"),
            std::string::npos)
      << missing.body;

  // The namespaces a cluster cannot do without may not be deleted (kube: NamespaceLifecycle).
  for (const char* immortal : {"default", "kube-system", "kube-public"}) {
    const http::Response r = Delete(std::string("/api/v1/namespaces/") + immortal);
    ExpectStatus(r, 403, "Forbidden");
    EXPECT_EQ(Body(r).value("message", ""),
              std::string("namespaces \"") + immortal +
                  "\" is forbidden: this namespace may not be deleted");
  }
  EXPECT_FALSE(
      Body(Get("/api/v1/namespaces/default")).contains("/metadata/deletionTimestamp"_json_pointer));

  const http::Response ns =
      Post("/api/v1/namespaces",
           {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "doomed"}}}});
  ASSERT_EQ(ns.status, 201) << ns.body;
  EXPECT_EQ(Body(ns).value("/status/phase"_json_pointer, ""), "Active");
  const std::string contents = "/api/v1/namespaces/doomed/configmaps";
  MustCreate(contents, ConfigMap("plain"));
  json held = ConfigMap("held");
  held["metadata"]["finalizers"] = {"test.sluice.dev/hold"};
  MustCreate(contents, held);

  http::Response r = Delete("/api/v1/namespaces/doomed");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/status/phase"_json_pointer, ""), "Terminating");

  // The namespace empties; the held object keeps it Terminating, and nothing new gets in.
  EXPECT_TRUE(Eventually([&] { return Get(contents + "/plain").status == 404; }));
  ASSERT_TRUE(Eventually([&] {
    return Body(Get(contents + "/held")).contains("/metadata/deletionTimestamp"_json_pointer);
  }));
  r = Get("/api/v1/namespaces/doomed");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).value("/status/phase"_json_pointer, ""), "Terminating");
  r = Post(contents, ConfigMap("late"));
  ExpectStatus(r, 403, "Forbidden");
  EXPECT_NE(Body(r).value("message", "").find("because it is being terminated"), std::string::npos)
      << r.body;

  // Once the last object goes, so does the namespace.
  ASSERT_EQ(Patch(contents + "/held", {{"metadata", {{"finalizers", nullptr}}}}).status, 200);
  EXPECT_TRUE(Eventually([&] { return Get("/api/v1/namespaces/doomed").status == 404; }))
      << Get("/api/v1/namespaces/doomed").body;
  EXPECT_EQ(Get(contents + "/held").status, 404);
}

// ---- CRD deletion ------------------------------------------------------------------------

TEST_F(ApiServerTest, DeletingACrdRemovesItsResourcesAndItsDiscovery) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  MustCreate(kRolloutPools, RolloutPool("a"));
  MustCreate("/apis/sluice.dev/v1alpha1/namespaces/kube-system/rolloutpools", RolloutPool("b"));
  ASSERT_EQ(Get("/apis/sluice.dev/v1alpha1").status, 200);

  const http::Response r =
      Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rolloutpools.sluice.dev");
  ASSERT_EQ(r.status, 200) << r.body;

  ExpectStatus(Get(std::string(kRolloutPools) + "/a"), 404, "NotFound");
  ExpectStatus(Get("/apis/sluice.dev/v1alpha1/rolloutpools"), 404, "NotFound");
  EXPECT_EQ(Get("/apis/sluice.dev/v1alpha1").status, 404);
  EXPECT_EQ(Get("/apis/sluice.dev").status, 404);
  const json groups = Body(Get("/apis"));
  for (const json& g : groups.value("groups", json::array())) {
    EXPECT_NE(g.value("name", ""), "sluice.dev") << groups;
  }
  EXPECT_EQ(
      Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rolloutpools.sluice.dev").status,
      404);

  // The objects are gone from storage, not just hidden: a reinstalled CRD serves none.
  Result<ListResult> stored =
      server_->storage().List("sluice.dev/rolloutpools", std::nullopt, 0, "");
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->items.empty());
  InstallCrd("rolloutpools.yaml");
  const json list = Body(Get("/apis/sluice.dev/v1alpha1/rolloutpools"));
  EXPECT_EQ(list.value("kind", ""), "RolloutPoolList");
  EXPECT_TRUE(list.value("items", json::array({1})).empty()) << list;
}

}  // namespace
}  // namespace sluice::apiserver
