// Resource registry, request paths and discovery documents.
#include "localcluster/apiserver/discovery.h"

#include <gtest/gtest.h>

#include "localcluster/apiserver/request_info.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json RolloutPoolCrd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "rolloutpools.sluice.dev"},
    "spec": {"group": "sluice.dev", "scope": "Namespaced",
      "names": {"kind": "RolloutPool", "listKind": "RolloutPoolList", "plural": "rolloutpools",
                "singular": "rolloutpool", "shortNames": ["rp"], "categories": ["sluice"]},
      "versions": [
        {"name": "v1alpha1", "served": true, "storage": true,
         "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
             "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1alpha0", "served": false, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

TEST(ApiserverRegistryTest, BuiltinsAndCrds) {
  ResourceRegistry r = ResourceRegistry::WithBuiltins();
  const ResourceInfo* pods = r.Find("", "v1", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_TRUE(pods->namespaced);
  EXPECT_TRUE(pods->has_log);
  EXPECT_EQ(pods->ApiVersion(), "v1");
  EXPECT_FALSE(r.Find("", "v1", "nodes")->namespaced);
  EXPECT_NE(r.FindByKind("coordination.k8s.io/v1", "Lease"), nullptr);
  EXPECT_EQ(r.Find("sluice.dev", "v1alpha1", "rolloutpools"), nullptr);

  ASSERT_TRUE(r.AddCrd(RolloutPoolCrd()).ok());
  const ResourceInfo* rp = r.Find("sluice.dev", "v1alpha1", "rolloutpools");
  ASSERT_NE(rp, nullptr);
  EXPECT_EQ(rp->kind, "RolloutPool");
  EXPECT_EQ(rp->StorageResource(), "rolloutpools.sluice.dev");
  EXPECT_TRUE(rp->has_status);
  ASSERT_TRUE(rp->scale.has_value());
  EXPECT_EQ(rp->scale->label_selector_path, ".status.selector");
  EXPECT_EQ(r.Find("sluice.dev", "v1alpha0", "rolloutpools"), nullptr);  // Not served.
  EXPECT_EQ(r.FindByKind("sluice.dev/v1alpha1", "RolloutPool"), rp);
  EXPECT_EQ(r.Versions("sluice.dev"), std::vector<std::string>{"v1alpha1"});
  EXPECT_EQ(r.Groups().front(), "");
  EXPECT_EQ(r.Groups().back(), "sluice.dev");

  // Re-adding (a CRD update) replaces; removing drops the group.
  ASSERT_TRUE(r.AddCrd(RolloutPoolCrd()).ok());
  EXPECT_TRUE(r.RemoveCrd("rolloutpools.sluice.dev"));
  EXPECT_EQ(r.Find("sluice.dev", "v1alpha1", "rolloutpools"), nullptr);
  EXPECT_TRUE(r.Versions("sluice.dev").empty());
  EXPECT_EQ(r.Groups().back(), "apiextensions.k8s.io");
  EXPECT_FALSE(r.RemoveCrd("rolloutpools.sluice.dev"));
}

TEST(ApiserverRegistryTest, BadCrdsAreRejectedByField) {
  ResourceRegistry r = ResourceRegistry::WithBuiltins();
  json crd = RolloutPoolCrd();
  crd["metadata"]["name"] = "pools.sluice.dev";
  Status s = r.AddCrd(crd);
  EXPECT_EQ(s.field(), "metadata.name");
  crd = RolloutPoolCrd();
  crd["spec"].erase("group");
  EXPECT_EQ(r.AddCrd(crd).field(), "spec.group");
  // A CRD may not take over a built-in resource.
  crd = RolloutPoolCrd();
  crd["metadata"]["name"] = "leases.coordination.k8s.io";
  crd["spec"]["group"] = "coordination.k8s.io";
  crd["spec"]["names"]["plural"] = "leases";
  crd["spec"]["versions"][0]["name"] = "v1";
  s = r.AddCrd(crd);
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_NE(s.message().find("built-in"), std::string::npos);
}

TEST(ApiserverRequestInfoTest, ParsesResourcePathsAndVerbs) {
  struct Case {
    std::string method, path, watch;
    std::string verb, group, version, ns, resource, name, sub;
  };
  const Case cases[] = {
      {"GET", "/api/v1/namespaces/default/pods", "", "list", "", "v1", "default", "pods", "", ""},
      {"GET", "/api/v1/namespaces/default/pods", "true", "watch", "", "v1", "default", "pods", "",
       ""},
      {"GET", "/api/v1/pods", "1", "watch", "", "v1", "", "pods", "", ""},
      {"GET", "/api/v1/namespaces/default/pods/p-0/log", "", "get", "", "v1", "default", "pods",
       "p-0", "log"},
      {"GET", "/api/v1/namespaces/ml", "", "get", "", "v1", "ml", "namespaces", "ml", ""},
      {"PUT", "/api/v1/namespaces/ml/status", "", "update", "", "v1", "ml", "namespaces", "ml",
       "status"},
      {"GET", "/api/v1/namespaces", "", "list", "", "v1", "", "namespaces", "", ""},
      {"POST", "/apis/sluice.dev/v1alpha1/namespaces/ml/rolloutpools", "", "create", "sluice.dev",
       "v1alpha1", "ml", "rolloutpools", "", ""},
      {"PATCH", "/apis/sluice.dev/v1alpha1/namespaces/ml/rolloutpools/rp/scale", "", "patch",
       "sluice.dev", "v1alpha1", "ml", "rolloutpools", "rp", "scale"},
      {"DELETE", "/api/v1/namespaces/ml/configmaps", "", "deletecollection", "", "v1", "ml",
       "configmaps", "", ""},
      {"DELETE", "/api/v1/nodes/n1", "", "delete", "", "v1", "", "nodes", "n1", ""},
  };
  for (const Case& c : cases) {
    Result<RequestInfo> info = ParseRequest(c.method, c.path, c.watch);
    ASSERT_TRUE(info.ok()) << c.path;
    EXPECT_TRUE(info->is_resource_request) << c.path;
    EXPECT_EQ(info->verb, c.verb) << c.path;
    EXPECT_EQ(info->group, c.group) << c.path;
    EXPECT_EQ(info->version, c.version) << c.path;
    EXPECT_EQ(info->namespace_, c.ns) << c.path;
    EXPECT_EQ(info->resource, c.resource) << c.path;
    EXPECT_EQ(info->name, c.name) << c.path;
    EXPECT_EQ(info->subresource, c.sub) << c.path;
  }
}

TEST(ApiserverRequestInfoTest, DiscoveryAndOtherPathsAreNotResourceRequests) {
  for (const char* path : {"/api", "/api/v1", "/apis", "/apis/sluice.dev",
                           "/apis/sluice.dev/v1alpha1", "/version", "/openapi/v2", "/healthz"}) {
    Result<RequestInfo> info = ParseRequest("GET", path, "");
    ASSERT_TRUE(info.ok()) << path;
    EXPECT_FALSE(info->is_resource_request) << path;
  }
  EXPECT_FALSE(ParseRequest("GET", "/api/v1/namespaces/a/pods/p/log/extra", "").ok());
  EXPECT_FALSE(ParseRequest("TRACE", "/api/v1/pods", "").ok());
}

TEST(ApiserverDiscoveryTest, DocumentsHaveKubectlsShapes) {
  ResourceRegistry r = ResourceRegistry::WithBuiltins();
  ASSERT_TRUE(r.AddCrd(RolloutPoolCrd()).ok());
  EXPECT_EQ(CoreApiVersions("127.0.0.1:6443")["versions"], json::array({"v1"}));

  const json groups = ApiGroupList(r);
  EXPECT_EQ(groups["kind"], "APIGroupList");
  bool found = false;
  for (const json& g : groups["groups"]) {
    EXPECT_NE(g["name"], "");  // The core group is only under /api.
    if (g["name"] == "sluice.dev") {
      found = true;
      EXPECT_EQ(g["preferredVersion"]["groupVersion"], "sluice.dev/v1alpha1");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ApiGroup(r, "sluice.dev").value()["kind"], "APIGroup");
  EXPECT_FALSE(ApiGroup(r, "nope.dev").has_value());

  const json list = ApiResourceList(r, "sluice.dev", "v1alpha1").value();
  EXPECT_EQ(list["groupVersion"], "sluice.dev/v1alpha1");
  std::vector<std::string> names;
  for (const json& res : list["resources"]) names.push_back(res["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"rolloutpools", "rolloutpools/status",
                                             "rolloutpools/scale"}));
  const json& rp = list["resources"][0];
  EXPECT_EQ(rp["shortNames"], json::array({"rp"}));
  EXPECT_EQ(rp["categories"], json::array({"sluice"}));
  EXPECT_EQ(rp["namespaced"], true);
  EXPECT_EQ(list["resources"][2]["kind"], "Scale");

  const json core = ApiResourceList(r, "", "v1").value();
  EXPECT_EQ(core["groupVersion"], "v1");
  bool log = false;
  for (const json& res : core["resources"]) log = log || res["name"] == "pods/log";
  EXPECT_TRUE(log);
  EXPECT_FALSE(ApiResourceList(r, "sluice.dev", "v9").has_value());
}

}  // namespace
}  // namespace sluice::apiserver
