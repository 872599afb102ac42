// The local cluster's simulated nodes, read from a YAML file (`sluice-node --cluster-config`,
// examples/local-cluster.yaml), and the Node object each one is registered as.
//
//   nodes:
//     - name: us-east-gpu-0           # DNS-1123 name, unique
//       region: local-us-east         # topology.kubernetes.io/region
//       zone: local-us-east-a         # topology.kubernetes.io/zone (default: <region>-a)
//       cpu: "8"                      # capacity, Kubernetes quantities
//       memory: 32Gi
//       pods: 110
//       gpus: 2                       # nvidia.com/gpu
//       gpuProduct: H100              # nvidia.com/gpu.product
//       gpuDevices: [0, 1]            # optional: real GPU indices these simulated GPUs map to
//       labels: {team: rl}            # extra labels
//       taints: [{key: k, value: v, effect: NoSchedule}]
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::node {

// Label and annotation keys the node agent reads or writes.
inline constexpr char kRegionLabel[] = "topology.kubernetes.io/region";
inline constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
inline constexpr char kGpuCountLabel[] = "nvidia.com/gpu.count";
inline constexpr char kGpuResource[] = "nvidia.com/gpu";
// Marks the Nodes this agent registered (value: the agent's name).
inline constexpr char kAgentLabel[] = "sluice.dev/node-agent";
// `sluice node fail` sets it to "true": the agent stops heartbeating the node and kills its pods'
// processes, as if the machine had died; removing it is `sluice node recover`.
inline constexpr char kSimulatedFailureAnnotation[] = "sluice.dev/simulated-failure";

struct NodeSpec {
  std::string name;
  std::string region;
  std::string zone;
  std::string cpu = "8";        // Quantity.
  std::string memory = "32Gi";  // Quantity.
  int64_t pods = 110;
  int64_t gpus = 0;
  std::string gpu_product;       // Empty when gpus == 0.
  std::vector<int> gpu_devices;  // Real device indices, one per simulated GPU; empty: simulated.
  std::map<std::string, std::string> labels;
  nlohmann::json taints = nlohmann::json::array();  // Node.spec.taints entries.
};

struct ClusterConfig {
  std::vector<NodeSpec> nodes;
};

// Parses and validates the YAML text. Errors name the field (`nodes[1].gpus`) and the problem.
Result<ClusterConfig> ParseClusterConfig(std::string_view yaml_text);
Result<ClusterConfig> LoadClusterConfig(const std::string& path);

struct KubeletEndpoint {
  std::string address;  // The agent's address, the Nodes' InternalIP (log requests go there).
  int port = 0;         // The agent's kubelet port.
};

// The labels, capacity, taints and addresses the agent owns on the Node object. Registration
// merges these into the stored Node (other labels, annotations, spec.unschedulable and taints
// added by others are kept).
nlohmann::json NodeLabels(const NodeSpec& spec, const std::string& agent_name);
nlohmann::json NodeCapacity(const NodeSpec& spec);
// A complete Node for create; status with Ready=True as of `now_rfc3339`.
nlohmann::json NodeObject(const NodeSpec& spec, const std::string& agent_name,
                          const KubeletEndpoint& endpoint, const std::string& now_rfc3339);
// The status part the agent writes on every heartbeat (capacity, allocatable, conditions,
// addresses, daemonEndpoints, nodeInfo).
nlohmann::json NodeStatus(const NodeSpec& spec, const KubeletEndpoint& endpoint,
                          const std::string& now_rfc3339, const nlohmann::json& old_conditions);

}  // namespace sluice::node
