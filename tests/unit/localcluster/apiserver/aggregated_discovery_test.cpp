// Aggregated discovery (apidiscovery.k8s.io/v2) documents and Accept negotiation.
#include "localcluster/apiserver/aggregated_discovery.h"

#include <gtest/gtest.h>

#include <algorithm>

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
             "statusReplicasPath": ".status.replicas"}},
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1alpha2", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

const json* FindResource(const json& version, const std::string& plural) {
  for (const json& r : version["resources"]) {
    if (r["resource"] == plural) return &r;
  }
  return nullptr;
}

TEST(AggregatedDiscoveryTest, AcceptNegotiation) {
  // kubectl v1.32's header.
  EXPECT_TRUE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/"
      "json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
  EXPECT_TRUE(WantsAggregatedDiscovery(
      "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io"));
  EXPECT_TRUE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer"));
  EXPECT_TRUE(WantsAggregatedDiscovery(std::string(kAggregatedDiscoveryContentType)));
  EXPECT_FALSE(WantsAggregatedDiscovery("application/json"));
  EXPECT_FALSE(WantsAggregatedDiscovery("*/*"));
  EXPECT_FALSE(WantsAggregatedDiscovery(""));
  EXPECT_FALSE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"));
  EXPECT_FALSE(WantsAggregatedDiscovery(
      "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"));
  EXPECT_FALSE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"));
  EXPECT_FALSE(WantsAggregatedDiscovery("application/json;as=Table;v=v1;g=meta.k8s.io"));
}

TEST(AggregatedDiscoveryTest, CoreGroup) {
  const ResourceRegistry r = ResourceRegistry::WithBuiltins();
  const json list = AggregatedDiscovery(r, /*core=*/true);
  EXPECT_EQ(list["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(list["apiVersion"], "apidiscovery.k8s.io/v2");
  ASSERT_EQ(list["items"].size(), 1u);
  const json& core = list["items"][0];
  EXPECT_FALSE(core["metadata"].contains("name"));  // The core group's name is "".
  ASSERT_EQ(core["versions"].size(), 1u);
  const json& v1 = core["versions"][0];
  EXPECT_EQ(v1["version"], "v1");
  EXPECT_EQ(v1["freshness"], "Current");

  const json* pods = FindResource(v1, "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_EQ((*pods)["scope"], "Namespaced");
  EXPECT_EQ((*pods)["singularResource"], "pod");
  EXPECT_EQ((*pods)["responseKind"], json({{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}));
  EXPECT_EQ((*pods)["shortNames"], json::array({"po"}));
  EXPECT_EQ((*pods)["categories"], json::array({"all"}));
  EXPECT_NE(std::find((*pods)["verbs"].begin(), (*pods)["verbs"].end(), "watch"),
            (*pods)["verbs"].end());
  std::vector<std::string> subs;
  for (const json& s : (*pods)["subresources"]) subs.push_back(s["subresource"]);
  EXPECT_EQ(subs, (std::vector<std::string>{"status", "log"}));
  EXPECT_EQ((*pods)["subresources"][1]["verbs"], json::array({"get"}));

  const json* nodes = FindResource(v1, "nodes");
  ASSERT_NE(nodes, nullptr);
  EXPECT_EQ((*nodes)["scope"], "Cluster");
  const json* configmaps = FindResource(v1, "configmaps");
  ASSERT_NE(configmaps, nullptr);
  EXPECT_FALSE(configmaps->contains("subresources"));
  EXPECT_FALSE(configmaps->contains("categories"));

  // serviceaccounts/token answers with another group's kind, as in kube.
  const json* accounts = FindResource(v1, "serviceaccounts");
  ASSERT_NE(accounts, nullptr);
  EXPECT_EQ((*accounts)["shortNames"], json::array({"sa"}));
  ASSERT_EQ((*accounts)["subresources"].size(), 1u);
  EXPECT_EQ((*accounts)["subresources"][0], json::parse(R"({"subresource": "token",
      "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
      "verbs": ["create"]})"));
}

TEST(AggregatedDiscoveryTest, NamedGroupsWithCrds) {
  ResourceRegistry r = ResourceRegistry::WithBuiltins();
  ASSERT_TRUE(r.AddCrd(RolloutPoolCrd()).ok());
  const json list = AggregatedDiscovery(r, /*core=*/false);
  std::vector<std::string> groups;
  for (const json& g : list["items"]) groups.push_back(g["metadata"]["name"]);
  EXPECT_EQ(groups, (std::vector<std::string>{"events.k8s.io", "coordination.k8s.io", "apps",
                                              "networking.k8s.io", "rbac.authorization.k8s.io",
                                              "authorization.k8s.io", "authentication.k8s.io",
                                              "apiextensions.k8s.io", "sluice.dev"}));
  const json& sluice = list["items"][8];
  ASSERT_EQ(sluice["versions"].size(), 2u);
  EXPECT_EQ(sluice["versions"][0]["version"], "v1alpha1");  // The storage version first.
  EXPECT_EQ(sluice["versions"][1]["version"], "v1alpha2");
  const json* pools = FindResource(sluice["versions"][0], "rolloutpools");
  ASSERT_NE(pools, nullptr);
  EXPECT_EQ((*pools)["responseKind"]["kind"], "RolloutPool");
  EXPECT_EQ((*pools)["responseKind"]["group"], "sluice.dev");
  EXPECT_EQ((*pools)["shortNames"], json::array({"rp"}));
  EXPECT_EQ((*pools)["categories"], json::array({"sluice"}));
  ASSERT_EQ((*pools)["subresources"].size(), 2u);
  EXPECT_EQ((*pools)["subresources"][1]["subresource"], "scale");
  EXPECT_EQ((*pools)["subresources"][1]["responseKind"],
            json({{"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"}}));
  // v1alpha2 declares no subresources.
  EXPECT_FALSE(FindResource(sluice["versions"][1], "rolloutpools")->contains("subresources"));

  const json* crds = FindResource(list["items"][7]["versions"][0], "customresourcedefinitions");
  ASSERT_NE(crds, nullptr);
  EXPECT_EQ((*crds)["scope"], "Cluster");
  EXPECT_EQ((*crds)["shortNames"], json::array({"crd", "crds"}));

  r.RemoveCrd("rolloutpools.sluice.dev");
  EXPECT_EQ(AggregatedDiscovery(r, false)["items"].size(), 8u);
}

}  // namespace
}  // namespace sluice::apiserver
