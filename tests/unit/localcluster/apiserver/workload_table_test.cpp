// Tests of the Deployment and ReplicaSet table printers.
#include "localcluster/apiserver/workload_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/time_format.h"
#include "localcluster/apiserver/deletion.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

TEST(WorkloadTableTest, LabelSelectorsPrintAsKubectlPrintsThem) {
  EXPECT_EQ(FormatLabelSelector(json::object()), "<none>");
  EXPECT_EQ(FormatLabelSelector(json::parse(R"({"matchLabels": {"app": "web", "tier": "fe"},
      "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]},
                           {"key": "x", "operator": "NotIn", "values": ["c"]},
                           {"key": "y", "operator": "Exists"},
                           {"key": "z", "operator": "DoesNotExist"}]})")),
            "app=web,tier=fe,env in (a,b),x notin (c),y,!z");
}

TEST(WorkloadTableTest, DeploymentAndReplicaSetRowsHaveKubesColumns) {
  const Clock::WallTime now = *TryParseTime("2026-11-29T10:05:00Z");
  const json template_spec = json::parse(R"({"spec": {"containers": [
      {"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}})");
  const json deployment = {
      {"metadata", {{"name", "web"}, {"creationTimestamp", "2026-11-29T10:00:00Z"}}},
      {"spec",
       {{"replicas", 3},
        {"selector", {{"matchLabels", {{"app", "web"}}}}},
        {"template", template_spec}}},
      {"status", {{"readyReplicas", 2}, {"updatedReplicas", 3}, {"availableReplicas", 2}}}};
  const WorkloadPrinter& d = WorkloadPrinters().at("apps/deployments");
  std::vector<std::string> names;
  for (const PrinterColumn& c : d.columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "Ready", "Up-to-date", "Available", "Age",
                                             "Containers", "Images", "Selector"}));
  EXPECT_EQ(d.row(deployment, now)["cells"],
            json({"web", "2/3", 3, 2, "5m", "web,log", "nginx:1,busybox", "app=web"}));

  json rs = deployment;
  rs["metadata"]["name"] = "web-abc";
  rs["status"] = {{"replicas", 3}, {"readyReplicas", 1}};
  const WorkloadPrinter& r = WorkloadPrinters().at("apps/replicasets");
  EXPECT_EQ(r.columns[1].name, "Desired");
  EXPECT_EQ(r.row(rs, now)["cells"],
            json({"web-abc", 3, 3, 1, "5m", "web,log", "nginx:1,busybox", "app=web"}));
  // A new object without status prints zeros.
  json fresh = deployment;
  fresh.erase("status");
  EXPECT_EQ(d.row(fresh, now)["cells"][1], "0/3");
}

}  // namespace
}  // namespace sluice::apiserver
