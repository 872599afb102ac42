#include "localcluster/node/cluster_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/read_file.h"

namespace sluice::node {
namespace {

using nlohmann::json;

std::filesystem::path ExamplePath() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  const std::filesystem::path root = dir ? std::filesystem::path(dir) : std::filesystem::path(".");
  return root / "examples" / "local-cluster.yaml";
}

// The error of parsing `yaml`, which must fail.
Status ParseError(const std::string& yaml) {
  Result<ClusterConfig> config = ParseClusterConfig(yaml);
  EXPECT_FALSE(config.ok()) << yaml;
  return config.status();
}

NodeSpec ParseOne(const std::string& node_yaml) {
  Result<ClusterConfig> config = ParseClusterConfig("nodes:\n" + node_yaml);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok() || config->nodes.size() != 1) return NodeSpec{};
  return config->nodes[0];
}

NodeSpec GpuSpec() {
  NodeSpec s;
  s.name = "us-east-gpu-0";
  s.region = "local-us-east";
  s.zone = "local-us-east-a";
  s.cpu = "8";
  s.memory = "32Gi";
  s.pods = 110;
  s.gpus = 2;
  s.gpu_product = "H100";
  return s;
}

const json* FindCondition(const json& conditions, const std::string& type) {
  for (const json& c : conditions) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

// --- ParseClusterConfig ------------------------------------------------------------------------

TEST(ClusterConfigParseTest, ExampleFileParses) {
  const std::string text = test_support::ReadFileOrEmpty(ExamplePath());
  ASSERT_FALSE(text.empty()) << "cannot read " << ExamplePath();
  Result<ClusterConfig> config = ParseClusterConfig(text);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->nodes.size(), 4u);

  const NodeSpec& gpu0 = config->nodes[0];
  EXPECT_EQ(gpu0.name, "us-east-gpu-0");
  EXPECT_EQ(gpu0.region, "local-us-east");
  EXPECT_EQ(gpu0.zone, "local-us-east-a");
  EXPECT_EQ(gpu0.cpu, "8");
  EXPECT_EQ(gpu0.memory, "32Gi");
  EXPECT_EQ(gpu0.pods, 110);
  EXPECT_EQ(gpu0.gpus, 2);
  EXPECT_EQ(gpu0.gpu_product, "H100");
  EXPECT_TRUE(gpu0.gpu_devices.empty());
  EXPECT_TRUE(gpu0.labels.empty());
  EXPECT_EQ(gpu0.taints, json::array());

  const NodeSpec& gpu1 = config->nodes[1];
  EXPECT_EQ(gpu1.name, "eu-west-gpu-0");
  EXPECT_EQ(gpu1.region, "local-eu-west");
  EXPECT_EQ(gpu1.zone, "local-eu-west-a");
  EXPECT_EQ(gpu1.gpus, 1);
  EXPECT_EQ(gpu1.gpu_product, "A100");

  const NodeSpec& cpu0 = config->nodes[2];
  EXPECT_EQ(cpu0.name, "us-east-cpu-0");
  EXPECT_EQ(cpu0.region, "local-us-east");
  EXPECT_EQ(cpu0.zone, "local-us-east-b");
  EXPECT_EQ(cpu0.cpu, "16");
  EXPECT_EQ(cpu0.memory, "64Gi");
  EXPECT_EQ(cpu0.gpus, 0);
  EXPECT_EQ(cpu0.gpu_product, "");

  const NodeSpec& cpu1 = config->nodes[3];
  EXPECT_EQ(cpu1.name, "eu-west-cpu-0");
  EXPECT_EQ(cpu1.zone, "local-eu-west-b");
  EXPECT_EQ(cpu1.cpu, "8");
  EXPECT_EQ(cpu1.memory, "32Gi");
}

TEST(ClusterConfigParseTest, LoadExampleFile) {
  Result<ClusterConfig> config = LoadClusterConfig(ExamplePath().string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->nodes.size(), 4u);
}

TEST(ClusterConfigParseTest, LoadMissingFileIsNotFound) {
  Result<ClusterConfig> config = LoadClusterConfig("/nonexistent/sluice/cluster.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(config.status().message().find("/nonexistent/sluice/cluster.yaml"), std::string::npos);
}

TEST(ClusterConfigParseTest, LoadErrorNamesPathAndField) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "sluice_cluster_config_test_bad.yaml";
  {
    std::ofstream out(path);
    out << "nodes:\n  - name: a\n    gpus: 1\n";
  }
  Result<ClusterConfig> config = LoadClusterConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message().rfind(path.string() + ": nodes[0].gpuProduct: ", 0), 0u)
      << config.status().message();
}

TEST(ClusterConfigParseTest, Defaults) {
  NodeSpec s = ParseOne("  - name: n1\n");
  EXPECT_EQ(s.name, "n1");
  EXPECT_EQ(s.region, "local");
  EXPECT_EQ(s.zone, "local-a");
  EXPECT_EQ(s.cpu, "8");
  EXPECT_EQ(s.memory, "32Gi");
  EXPECT_EQ(s.pods, 110);
  EXPECT_EQ(s.gpus, 0);
  EXPECT_EQ(s.gpu_product, "");
  EXPECT_TRUE(s.gpu_devices.empty());
  EXPECT_TRUE(s.labels.empty());
  EXPECT_EQ(s.taints, json::array());
}

TEST(ClusterConfigParseTest, ZoneDefaultsToRegionA) {
  NodeSpec s = ParseOne("  - name: n1\n    region: eu-north\n");
  EXPECT_EQ(s.region, "eu-north");
  EXPECT_EQ(s.zone, "eu-north-a");
}

TEST(ClusterConfigParseTest, AllFields) {
  NodeSpec s = ParseOne(
      "  - name: gpu.node-7\n"
      "    region: r1\n"
      "    zone: z9\n"
      "    cpu: 500m\n"
      "    memory: 1Gi\n"
      "    pods: 20\n"
      "    gpus: 2\n"
      "    gpuProduct: L4\n"
      "    gpuDevices: [3, 1]\n"
      "    labels: {team: rl, tier: gold}\n"
      "    taints:\n"
      "      - {key: dedicated, value: rl, effect: NoSchedule}\n"
      "      - {key: spot, effect: PreferNoSchedule}\n");
  EXPECT_EQ(s.name, "gpu.node-7");
  EXPECT_EQ(s.region, "r1");
  EXPECT_EQ(s.zone, "z9");
  EXPECT_EQ(s.cpu, "500m");
  EXPECT_EQ(s.memory, "1Gi");
  EXPECT_EQ(s.pods, 20);
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.gpu_product, "L4");
  EXPECT_EQ(s.gpu_devices, (std::vector<int>{3, 1}));
  EXPECT_EQ(s.labels, (std::map<std::string, std::string>{{"team", "rl"}, {"tier", "gold"}}));
  EXPECT_EQ(s.taints, json::parse(R"([
      {"key": "dedicated", "value": "rl", "effect": "NoSchedule"},
      {"key": "spot", "effect": "PreferNoSchedule"}])"));
}

TEST(ClusterConfigParseTest, NumericCpuBecomesString) {
  NodeSpec s = ParseOne("  - name: n1\n    cpu: 4\n");
  EXPECT_EQ(s.cpu, "4");
}

TEST(ClusterConfigParseTest, NoExecuteTaintAccepted) {
  NodeSpec s = ParseOne("  - name: n1\n    taints: [{key: k, effect: NoExecute}]\n");
  EXPECT_EQ(s.taints, json::parse(R"([{"key": "k", "effect": "NoExecute"}])"));
}

TEST(ClusterConfigParseTest, UnknownNodeFieldNamed) {
  Status s = ParseError("nodes:\n  - name: n1\n    gpu: 1\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "nodes[0].gpu");
  EXPECT_NE(s.message().find("unknown field"), std::string::npos) << s.message();
}

TEST(ClusterConfigParseTest, UnknownTopLevelFieldNamed) {
  Status s = ParseError("nodes:\n  - name: n1\nextra: 1\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "extra");
  EXPECT_EQ(s.message(), "unknown field (known: nodes)");
}

TEST(ClusterConfigParseTest, BadNames) {
  for (const std::string name : {"Upper", "-lead", "trail-", "under_score", "a b"}) {
    Status s = ParseError("nodes:\n  - name: \"" + name + "\"\n");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(s.field(), "nodes[0].name") << name;
  }
}

TEST(ClusterConfigParseTest, MissingNameIsBadName) {
  Status s = ParseError("nodes:\n  - region: r\n");
  EXPECT_EQ(s.field(), "nodes[0].name");
}

TEST(ClusterConfigParseTest, FieldIndexIsTheNodesIndex) {
  Status s = ParseError("nodes:\n  - name: ok\n  - name: Bad\n");
  EXPECT_EQ(s.field(), "nodes[1].name");
}

TEST(ClusterConfigParseTest, GpusWithoutProduct) {
  Status s = ParseError("nodes:\n  - name: n1\n    gpus: 2\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "nodes[0].gpuProduct");
}

TEST(ClusterConfigParseTest, GpuDevicesCountMismatch) {
  Status s = ParseError(
      "nodes:\n  - name: n1\n    gpus: 2\n    gpuProduct: H100\n"
      "    gpuDevices: [0]\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "nodes[0].gpuDevices");
  EXPECT_EQ(s.message(), "must list exactly `gpus` (2) device indices");
}

TEST(ClusterConfigParseTest, GpuDevicesNegativeIndexNamed) {
  Status s = ParseError(
      "nodes:\n  - name: n1\n    gpus: 2\n    gpuProduct: H100\n"
      "    gpuDevices: [0, -1]\n");
  EXPECT_EQ(s.field(), "nodes[0].gpuDevices[1]");
}

TEST(ClusterConfigParseTest, GpuDevicesNotAList) {
  Status s = ParseError(
      "nodes:\n  - name: n1\n    gpus: 1\n    gpuProduct: H100\n"
      "    gpuDevices: 0\n");
  EXPECT_EQ(s.field(), "nodes[0].gpuDevices");
  EXPECT_EQ(s.message(), "must be a list");
}

TEST(ClusterConfigParseTest, BadTaintEffect) {
  Status s = ParseError(
      "nodes:\n  - name: n1\n    taints:\n      - {key: a, effect: NoExecute}\n"
      "      - {key: b, effect: Sometimes}\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "nodes[0].taints[1].effect");
}

TEST(ClusterConfigParseTest, TaintWithoutEffect) {
  Status s = ParseError("nodes:\n  - name: n1\n    taints: [{key: a}]\n");
  EXPECT_EQ(s.field(), "nodes[0].taints[0].effect");
}

TEST(ClusterConfigParseTest, NonStringTaintEffectIsAnError) {
  Status s = ParseError("nodes:\n  - name: n1\n    taints: [{key: a, effect: 3}]\n");
  EXPECT_EQ(s.field(), "nodes[0].taints[0].effect");
}

TEST(ClusterConfigParseTest, TaintWithoutKey) {
  Status s = ParseError("nodes:\n  - name: n1\n    taints: [{effect: NoSchedule}]\n");
  EXPECT_EQ(s.field(), "nodes[0].taints[0]");
}

TEST(ClusterConfigParseTest, DuplicateNames) {
  Status s = ParseError("nodes:\n  - name: a\n  - name: b\n  - name: a\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "nodes[2].name");
  EXPECT_EQ(s.message(), "duplicate node name \"a\"");
}

TEST(ClusterConfigParseTest, BadQuantities) {
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    cpu: lots\n").field(), "nodes[0].cpu");
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    memory: 12Qi\n").field(), "nodes[0].memory");
  Status zero = ParseError("nodes:\n  - name: n1\n    cpu: \"0\"\n");
  EXPECT_EQ(zero.field(), "nodes[0].cpu");
  EXPECT_EQ(zero.message(), "must be positive");
}

TEST(ClusterConfigParseTest, BadPods) {
  Status zero = ParseError("nodes:\n  - name: n1\n    pods: 0\n");
  EXPECT_EQ(zero.field(), "nodes[0].pods");
  EXPECT_EQ(zero.message(), "must be at least 1");
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    pods: -3\n").field(), "nodes[0].pods");
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    pods: many\n").field(), "nodes[0].pods");
}

TEST(ClusterConfigParseTest, NegativeGpus) {
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    gpus: -1\n").field(), "nodes[0].gpus");
}

TEST(ClusterConfigParseTest, LabelValuesMustBeStrings) {
  Status s = ParseError("nodes:\n  - name: n1\n    labels: {team: [a]}\n");
  EXPECT_EQ(s.field(), "nodes[0].labels.team");
  EXPECT_EQ(ParseError("nodes:\n  - name: n1\n    labels: [a]\n").field(), "nodes[0].labels");
}

TEST(ClusterConfigParseTest, NodeMustBeMapping) {
  EXPECT_EQ(ParseError("nodes:\n  - just-a-name\n").field(), "nodes[0]");
}

TEST(ClusterConfigParseTest, EmptyOrMissingNodes) {
  for (const std::string yaml : {"nodes: []\n", "nodes: {}\n", "nodes: 3\n"}) {
    Status s = ParseError(yaml);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << yaml;
    EXPECT_EQ(s.field(), "nodes") << yaml;
    EXPECT_EQ(s.message(), "must be a non-empty list of nodes") << yaml;
  }
  EXPECT_EQ(ParseError("{}\n").field(), "nodes");
}

TEST(ClusterConfigParseTest, NotOneMapping) {
  EXPECT_EQ(ParseError("- a\n- b\n").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseError("nodes: [{name: a}]\n---\nnodes: [{name: b}]\n").code(),
            StatusCode::kInvalidArgument);
}

// --- NodeLabels / NodeCapacity -----------------------------------------------------------------

TEST(ClusterConfigNodeTest, LabelsOfGpuNode) {
  NodeSpec s = GpuSpec();
  s.labels = {{"team", "rl"}};
  EXPECT_EQ(NodeLabels(s, "agent-1"), json::parse(R"({
      "team": "rl",
      "kubernetes.io/hostname": "us-east-gpu-0",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "node.kubernetes.io/instance-type": "sluice-local",
      "topology.kubernetes.io/region": "local-us-east",
      "topology.kubernetes.io/zone": "local-us-east-a",
      "nvidia.com/gpu.product": "H100",
      "nvidia.com/gpu.count": "2",
      "sluice.dev/node-agent": "agent-1"})"));
}

TEST(ClusterConfigNodeTest, LabelsOfCpuNodeHaveNoGpuLabels) {
  NodeSpec s = GpuSpec();
  s.gpus = 0;
  s.gpu_product = "";
  json labels = NodeLabels(s, "a");
  EXPECT_FALSE(labels.contains(kGpuProductLabel));
  EXPECT_FALSE(labels.contains(kGpuCountLabel));
  EXPECT_EQ(labels[kHostnameLabel], "us-east-gpu-0");
  EXPECT_EQ(labels[kAgentLabel], "a");
  EXPECT_EQ(labels.size(), 7u);
}

TEST(ClusterConfigNodeTest, OwnLabelsOverrideExtraLabels) {
  NodeSpec s = GpuSpec();
  s.labels = {{kRegionLabel, "spoofed"}, {kAgentLabel, "other"}};
  json labels = NodeLabels(s, "agent-1");
  EXPECT_EQ(labels[kRegionLabel], "local-us-east");
  EXPECT_EQ(labels[kAgentLabel], "agent-1");
}

TEST(ClusterConfigNodeTest, Capacity) {
  EXPECT_EQ(NodeCapacity(GpuSpec()), json::parse(R"({
      "cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi",
      "nvidia.com/gpu": "2"})"));
  NodeSpec cpu = GpuSpec();
  cpu.gpus = 0;
  cpu.cpu = "16";
  cpu.memory = "64Gi";
  cpu.pods = 42;
  EXPECT_EQ(NodeCapacity(cpu), json::parse(R"({
      "cpu": "16", "memory": "64Gi", "pods": "42", "ephemeral-storage": "100Gi"})"));
}

// --- NodeObject / NodeStatus -------------------------------------------------------------------

TEST(ClusterConfigNodeTest, NodeObject) {
  NodeSpec s = GpuSpec();
  const KubeletEndpoint endpoint{"127.0.0.1", 10250};
  json node = NodeObject(s, "agent-1", endpoint, "2024-01-02T03:04:05Z");
  EXPECT_EQ(node["apiVersion"], "v1");
  EXPECT_EQ(node["kind"], "Node");
  EXPECT_EQ(node["metadata"]["name"], "us-east-gpu-0");
  EXPECT_EQ(node["metadata"]["labels"], NodeLabels(s, "agent-1"));
  EXPECT_EQ(node["spec"], json::object());
  EXPECT_EQ(node["status"], NodeStatus(s, endpoint, "2024-01-02T03:04:05Z", json::array()));
}

TEST(ClusterConfigNodeTest, NodeObjectCarriesTaints) {
  NodeSpec s = GpuSpec();
  s.taints = json::parse(R"([{"key": "dedicated", "value": "rl", "effect": "NoSchedule"}])");
  json node = NodeObject(s, "agent-1", {"10.0.0.5", 1234}, "2024-01-02T03:04:05Z");
  EXPECT_EQ(node["spec"]["taints"], s.taints);
}

TEST(ClusterConfigNodeTest, StatusAddressesAndEndpoint) {
  NodeSpec s = GpuSpec();
  json status = NodeStatus(s, {"10.1.2.3", 43210}, "2024-01-02T03:04:05Z", json::array());
  EXPECT_EQ(status["addresses"], json::parse(R"([
      {"type": "InternalIP", "address": "10.1.2.3"},
      {"type": "Hostname", "address": "us-east-gpu-0"}])"));
  EXPECT_EQ(status["daemonEndpoints"], json::parse(R"({"kubeletEndpoint": {"Port": 43210}})"));
  EXPECT_EQ(status["capacity"], NodeCapacity(s));
  EXPECT_EQ(status["allocatable"], NodeCapacity(s));
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["nodeInfo"]["machineID"], "us-east-gpu-0");
  EXPECT_EQ(status["nodeInfo"]["systemUUID"], "us-east-gpu-0");
  EXPECT_EQ(status["nodeInfo"]["architecture"], "amd64");
  EXPECT_EQ(status["nodeInfo"]["operatingSystem"], "linux");
}

TEST(ClusterConfigNodeTest, StatusConditions) {
  const std::string now = "2024-01-02T03:04:05Z";
  json status = NodeStatus(GpuSpec(), {"10.1.2.3", 1}, now, json::array());
  const json& conditions = status["conditions"];
  ASSERT_EQ(conditions.size(), 4u);
  const json* ready = FindCondition(conditions, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(*ready, json::parse(R"({
      "type": "Ready", "status": "True", "reason": "KubeletReady",
      "message": "kubelet is posting ready status",
      "lastHeartbeatTime": "2024-01-02T03:04:05Z",
      "lastTransitionTime": "2024-01-02T03:04:05Z"})"));
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure"}) {
    const json* c = FindCondition(conditions, type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ((*c)["status"], "False") << type;
    EXPECT_EQ((*c)["lastHeartbeatTime"], now) << type;
    EXPECT_EQ((*c)["lastTransitionTime"], now) << type;
  }
}

TEST(ClusterConfigNodeTest, TransitionTimeKeptWhenStatusUnchanged) {
  const std::string t0 = "2024-01-01T00:00:00Z";
  const std::string t1 = "2024-01-01T00:00:10Z";
  json first = NodeStatus(GpuSpec(), {"10.1.2.3", 1}, t0, json::array());
  json second = NodeStatus(GpuSpec(), {"10.1.2.3", 1}, t1, first["conditions"]);
  for (const json& c : second["conditions"]) {
    EXPECT_EQ(c["lastTransitionTime"], t0) << c["type"];
    EXPECT_EQ(c["lastHeartbeatTime"], t1) << c["type"];
  }
}

TEST(ClusterConfigNodeTest, TransitionTimeMovesWhenStatusChanged) {
  const std::string t1 = "2024-01-01T00:00:10Z";
  const json old = json::parse(R"([
      {"type": "Ready", "status": "Unknown", "lastTransitionTime": "2023-12-31T00:00:00Z"},
      {"type": "DiskPressure", "status": "False", "lastTransitionTime": "2023-06-01T00:00:00Z"}])");
  json status = NodeStatus(GpuSpec(), {"10.1.2.3", 1}, t1, old);
  EXPECT_EQ((*FindCondition(status["conditions"], "Ready"))["lastTransitionTime"], t1);
  EXPECT_EQ((*FindCondition(status["conditions"], "DiskPressure"))["lastTransitionTime"],
            "2023-06-01T00:00:00Z");
  EXPECT_EQ((*FindCondition(status["conditions"], "MemoryPressure"))["lastTransitionTime"], t1);
}

TEST(ClusterConfigNodeTest, NonArrayOldConditionsIgnored) {
  json status = NodeStatus(GpuSpec(), {"10.1.2.3", 1}, "t1", nullptr);
  EXPECT_EQ((*FindCondition(status["conditions"], "Ready"))["lastTransitionTime"], "t1");
}

}  // namespace
}  // namespace sluice::node
