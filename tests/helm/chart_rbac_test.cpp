// The chart's RBAC, as helm renders it, grants exactly the operator's table (OperatorRbacRules),
// the same rules `sluice up` installs: cluster-wide, per watched namespace, and the Lease in the
// release's namespace only with leader election. (That the committed template is the generator's
// current output is ChartRbacTest, in tests/unit/api/.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/operator_rbac.h"
#include "tests/helm/helm_chart.h"

namespace sluice::helm_test {
namespace {

using nlohmann::json;

// The table's rules granted cluster-wide (own_namespace false) or in the operator's namespace.
json TableRules(bool own_namespace) {
  json rules = json::array();
  for (const api::OperatorRbacRule& r : api::OperatorRbacRules()) {
    if (r.own_namespace_only != own_namespace) continue;
    rules.push_back({{"apiGroups", r.api_groups}, {"resources", r.resources}, {"verbs", r.verbs}});
  }
  return rules;
}

std::vector<json> RenderValues(const std::string& values) {
  HelmResult r = RenderChart(values);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ParseObjects(r.out);
}

constexpr char kStale[] =
    "; if the table changed, run build/bin/sluice-chart-rbac (after `make`) to regenerate "
    "helm/sluice/templates/rbac.yaml";

TEST(HelmChartRbacTest, ClusterWideRbacIsTheOperatorsTable) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = RenderValues("");
  json role = FindObject(objects, "ClusterRole", "sluice-operator");
  ASSERT_TRUE(role.is_object());
  EXPECT_EQ(role["rules"], TableRules(false)) << kStale;
  json binding = FindObject(objects, "ClusterRoleBinding", "sluice-operator");
  ASSERT_TRUE(binding.is_object());
  EXPECT_EQ(binding["roleRef"], json::parse(R"({"apiGroup": "rbac.authorization.k8s.io",
      "kind": "ClusterRole", "name": "sluice-operator"})"));
  EXPECT_EQ(binding["subjects"], json::parse(R"([{"kind": "ServiceAccount",
      "name": "sluice-operator", "namespace": "sluice-system"}])"));

  // Release "sluice" in sluice-system makes the objects `sluice up` makes, rule for rule.
  const std::vector<json> local = api::OperatorRbacObjects("sluice-system", "sluice-operator");
  ASSERT_EQ(local.size(), 4u);
  EXPECT_EQ(role["rules"], local[0].at("rules"));
  json lease_role = FindObject(objects, "Role", "sluice-operator-leader-election");
  ASSERT_TRUE(lease_role.is_object());
  EXPECT_EQ(lease_role["metadata"]["namespace"], "sluice-system");
  EXPECT_EQ(lease_role["rules"], TableRules(true)) << kStale;
  EXPECT_EQ(lease_role["rules"], local[2].at("rules"));
  json lease_binding = FindObject(objects, "RoleBinding", "sluice-operator-leader-election");
  ASSERT_TRUE(lease_binding.is_object());
  EXPECT_EQ(lease_binding["roleRef"]["name"], "sluice-operator-leader-election");
  EXPECT_EQ(lease_binding["subjects"], binding["subjects"]);
}

TEST(HelmChartRbacTest, EachWatchedNamespaceGetsTheTableAsARole) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects =
      RenderValues("operator:\n  watchNamespaces: [team-a, team-b]\n");
  int roles = 0;
  for (json role : FindObjects(objects, "Role")) {
    if (role["metadata"]["name"] != "sluice-operator") continue;
    ++roles;
    EXPECT_EQ(role["rules"], TableRules(false)) << role["metadata"]["namespace"] << kStale;
  }
  EXPECT_EQ(roles, 2);
  json lease_role = FindObject(objects, "Role", "sluice-operator-leader-election");
  EXPECT_EQ(lease_role["rules"], TableRules(true)) << kStale;
}

TEST(HelmChartRbacTest, NoLeaseRightsWithoutLeaderElection) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = RenderValues("operator:\n  leaderElection: {enabled: false}\n");
  for (json o : objects) {
    if (!o.contains("rules")) continue;
    for (json& rule : o["rules"]) {
      EXPECT_EQ(rule["resources"].dump().find("leases"), std::string::npos) << o.dump();
    }
  }
  json role = FindObject(objects, "ClusterRole", "sluice-operator");
  EXPECT_EQ(role["rules"], TableRules(false)) << kStale;
}

TEST(HelmChartRbacTest, RbacCreateFalseRendersNone) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects =
      RenderValues("rbac: {create: false}\nserviceAccount: {create: false, name: operator}\n");
  for (const char* kind : {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}) {
    EXPECT_TRUE(FindObjects(objects, kind).empty()) << kind;
  }
  EXPECT_TRUE(FindObjects(objects, "ServiceAccount").empty());
  json deployment = FindObject(objects, "Deployment");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["serviceAccountName"], "operator");
}

}  // namespace
}  // namespace sluice::helm_test
