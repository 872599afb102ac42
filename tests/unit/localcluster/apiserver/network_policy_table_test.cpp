// Table output for NetworkPolicies (network_policy_table.h), through the built-in printers that
// `kubectl get networkpolicies` reaches: NAME, POD-SELECTOR, AGE, as kube prints them.
#include "localcluster/apiserver/network_policy_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/time_format.h"
#include "localcluster/apiserver/builtin_table.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

TEST(NetworkPolicyTableTest, NamePodSelectorAge) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo* info = registry.Find("networking.k8s.io", "v1", "networkpolicies");
  ASSERT_NE(info, nullptr);
  const Clock::WallTime now = *TryParseTime("2026-11-29T10:05:00Z");
  const json selecting = json::parse(R"({"metadata": {"name": "arith-rollout-ingress",
      "creationTimestamp": "2026-11-29T10:00:00Z"},
      "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/component": "rollout",
                                               "sluice.dev/dataflow": "arith"}},
               "policyTypes": ["Ingress"]}})");
  const json deny_all = json::parse(R"({"metadata": {"name": "deny-all",
      "creationTimestamp": "2026-11-29T09:05:00Z"}, "spec": {"podSelector": {}}})");

  Result<json> table = BuildBuiltinTable(*info, {selecting, deny_all}, now, "7");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  std::vector<std::string> names;
  for (const json& c : (*table)["columnDefinitions"]) {
    names.push_back(c["name"]);
    EXPECT_EQ(c["priority"], 0);  // No -o wide columns.
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "Pod-Selector", "Age"}));
  EXPECT_EQ((*table)["rows"][0]["cells"],
            json({"arith-rollout-ingress",
                  "app.kubernetes.io/component=rollout,sluice.dev/dataflow=arith", "5m"}));
  // An empty selector selects the whole namespace; kubectl prints <none>.
  EXPECT_EQ((*table)["rows"][1]["cells"], json({"deny-all", "<none>", "60m"}));
  EXPECT_EQ(BuiltinPrinterColumns(*info).size(), 3u);
}

}  // namespace
}  // namespace sluice::apiserver
