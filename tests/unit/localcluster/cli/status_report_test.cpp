// Tests of the `sluice status` text (status_report.h), rendered from API objects.
#include "localcluster/cli/status_report.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

using nlohmann::json;

TEST(StatusReportTest, TableAlignsColumns) {
  EXPECT_EQ(RenderTable({"A", "LONGER"}, {{"xyz", "1"}, {"w", ""}}),
            "A    LONGER\n"
            "xyz  1\n"
            "w\n");
}

TEST(StatusReportTest, Components) {
  EXPECT_EQ(RenderComponents({{"apiserver", "running (pid 12)"}, {"node", "stopped"}}),
            "COMPONENT  STATE\n"
            "apiserver  running (pid 12)\n"
            "node       stopped\n");
}

TEST(StatusReportTest, NodeRowFromNodeObject) {
  json node = json::parse(R"({
    "metadata": {"name": "gpu-a-0", "labels": {"topology.kubernetes.io/region": "us-east-1"}},
    "spec": {"unschedulable": true},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64"},
               "conditions": [{"type": "MemoryPressure", "status": "False"},
                              {"type": "Ready", "status": "True"}]}})");
  EXPECT_EQ(NodeRow(node), (std::vector<std::string>{"gpu-a-0", "True", "us-east-1", "8", "true"}));
  // Nothing but a name: the defaults.
  EXPECT_EQ(NodeRow(json::parse(R"({"metadata": {"name": "bare"}})")),
            (std::vector<std::string>{"bare", "Unknown", "-", "0", "false"}));
}

TEST(StatusReportTest, NodesSortedByName) {
  const std::string text = RenderNodes({json::parse(R"({"metadata": {"name": "b"}})"),
                                        json::parse(R"({"metadata": {"name": "a"}})")});
  EXPECT_EQ(text,
            "NODE  READY    REGION  GPUS  UNSCHEDULABLE\n"
            "a     Unknown  -       0     false\n"
            "b     Unknown  -       0     false\n");
  EXPECT_EQ(RenderNodes({}), "No nodes.\n");
}

TEST(StatusReportTest, ResourceCountsWithPhases) {
  std::vector<json> jobs = {json::parse(R"({"status": {"phase": "Running"}})"),
                            json::parse(R"({"status": {"phase": "Running"}})"),
                            json::parse(R"({"status": {"phase": "Succeeded"}})"),
                            json::parse(R"({"spec": {}})")};
  ResourceCount trainerjobs = CountResources("trainerjobs", jobs, true);
  EXPECT_EQ(trainerjobs.count, std::optional<size_t>(4));
  EXPECT_EQ(trainerjobs.phases.at("Running"), 2u);
  ResourceCount policies = CountResources("policies", {json::object()}, false);
  EXPECT_TRUE(policies.phases.empty());
  ResourceCount missing;
  missing.resource = "dataflows";
  missing.note = "CRD not installed";
  EXPECT_EQ(RenderResourceCounts({policies, missing, trainerjobs}),
            "RESOURCE     COUNT\n"
            "policies     1\n"
            "dataflows    -  (CRD not installed)\n"
            "trainerjobs  4  (no phase 1, Running 2, Succeeded 1)\n");
}

}  // namespace
}  // namespace sluice::cli
