// Tests of the operator's RBAC table and the objects made from it.
#include "api/operator_rbac.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace sluice::api {
namespace {

using nlohmann::json;

TEST(OperatorRbacTest, ObjectsGrantTheTableToTheServiceAccount) {
  const std::vector<json> objects = OperatorRbacObjects("sluice-system", "sluice-operator");
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_EQ(objects[0]["kind"], "ClusterRole");
  EXPECT_EQ(objects[0]["metadata"]["name"], "sluice-operator");
  EXPECT_EQ(objects[1]["kind"], "ClusterRoleBinding");
  EXPECT_EQ(objects[1]["roleRef"], json({{"apiGroup", "rbac.authorization.k8s.io"},
                                         {"kind", "ClusterRole"},
                                         {"name", "sluice-operator"}}));
  EXPECT_EQ(objects[1]["subjects"], json::parse(R"([{"kind": "ServiceAccount",
      "name": "sluice-operator", "namespace": "sluice-system"}])"));
  EXPECT_EQ(objects[2]["kind"], "Role");
  EXPECT_EQ(objects[2]["metadata"],
            json({{"name", "sluice-operator-leader-election"}, {"namespace", "sluice-system"}}));
  EXPECT_EQ(objects[3]["kind"], "RoleBinding");
  EXPECT_EQ(objects[3]["roleRef"]["kind"], "Role");

  // Leases only in the operator's namespace; everything else cluster-wide; nothing twice.
  EXPECT_EQ(objects[2]["rules"], json::parse(R"([{"apiGroups": ["coordination.k8s.io"],
      "resources": ["leases"], "verbs": ["get", "create", "update"]}])"));
  std::set<std::string> granted;
  for (const json& rule : objects[0]["rules"]) {
    for (const json& g : rule["apiGroups"]) {
      for (const json& r : rule["resources"]) {
        for (const json& v : rule["verbs"]) {
          const std::string key =
              g.get<std::string>() + "/" + r.get<std::string>() + ":" + v.get<std::string>();
          EXPECT_TRUE(granted.insert(key).second) << key << " granted twice";
        }
      }
    }
  }
  for (const char* needed :
       {"sluice.dev/rolloutpools:watch", "sluice.dev/rolloutpools/status:patch", "/pods:create",
        "/pods:delete", "/events:create", "/secrets:get", "networking.k8s.io/networkpolicies:watch",
        "networking.k8s.io/networkpolicies:create", "networking.k8s.io/networkpolicies:delete"}) {
    EXPECT_TRUE(granted.count(needed)) << needed;
  }
  EXPECT_FALSE(granted.count("coordination.k8s.io/leases:get"));
  EXPECT_FALSE(granted.count("/nodes:list"));
  for (const OperatorRbacRule& r : OperatorRbacRules()) EXPECT_FALSE(r.why.empty());
}

}  // namespace
}  // namespace sluice::api
