#include "localcluster/node/cluster_config.h"

#include <regex>
#include <set>

#include "common/file/read_file.h"
#include "common/yaml/yaml_json.h"
#include "localcluster/node/resource_quantity.h"

namespace sluice::node {
namespace {

using nlohmann::json;

bool IsDnsLabelName(const std::string& s) {
  static const std::regex re("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, re);
}

Result<std::string> ConfigStringField(const json& obj, const char* key, const std::string& field,
                                      const std::string& fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return Status::InvalidArgument("must be a string", field + "." + key);
}

Result<int64_t> ConfigIntField(const json& obj, const char* key, const std::string& field,
                               int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Status::InvalidArgument("must be a non-negative integer", field + "." + key);
  }
  return it->get<int64_t>();
}

Status CheckQuantity(const std::string& value, const std::string& field) {
  Result<int64_t> q = ParseQuantityMilli(value);
  if (!q.ok()) return Status::InvalidArgument(q.status().message(), field);
  if (*q <= 0) return Status::InvalidArgument("must be positive", field);
  return Status::Ok();
}

Result<NodeSpec> ParseNode(const json& n, const std::string& field) {
  if (!n.is_object()) return Status::InvalidArgument("must be a mapping", field);
  static const std::set<std::string> known = {"name",   "region",     "zone",  "cpu",
                                              "memory", "pods",       "gpus",  "gpuProduct",
                                              "labels", "gpuDevices", "taints"};
  for (const auto& [key, _] : n.items()) {
    if (!known.count(key)) {
      return Status::InvalidArgument(
          "unknown field (known: name, region, zone, cpu, memory, "
          "pods, gpus, gpuProduct, gpuDevices, labels, taints)",
          field + "." + key);
    }
  }
  NodeSpec s;
  SLUICE_ASSIGN_OR_RETURN(s.name, ConfigStringField(n, "name", field, ""));
  if (!IsDnsLabelName(s.name)) {
    return Status::InvalidArgument("must be a lower-case DNS name (a-z, 0-9, '-', '.')",
                                   field + ".name");
  }
  SLUICE_ASSIGN_OR_RETURN(s.region, ConfigStringField(n, "region", field, "local"));
  SLUICE_ASSIGN_OR_RETURN(s.zone, ConfigStringField(n, "zone", field, s.region + "-a"));
  SLUICE_ASSIGN_OR_RETURN(s.cpu, ConfigStringField(n, "cpu", field, s.cpu));
  SLUICE_RETURN_IF_ERROR(CheckQuantity(s.cpu, field + ".cpu"));
  SLUICE_ASSIGN_OR_RETURN(s.memory, ConfigStringField(n, "memory", field, s.memory));
  SLUICE_RETURN_IF_ERROR(CheckQuantity(s.memory, field + ".memory"));
  SLUICE_ASSIGN_OR_RETURN(s.pods, ConfigIntField(n, "pods", field, s.pods));
  if (s.pods == 0) return Status::InvalidArgument("must be at least 1", field + ".pods");
  SLUICE_ASSIGN_OR_RETURN(s.gpus, ConfigIntField(n, "gpus", field, 0));
  SLUICE_ASSIGN_OR_RETURN(s.gpu_product, ConfigStringField(n, "gpuProduct", field, ""));
  if (s.gpus > 0 && s.gpu_product.empty()) {
    return Status::InvalidArgument("is required when gpus > 0 (e.g. H100)", field + ".gpuProduct");
  }
  if (auto it = n.find("gpuDevices"); it != n.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("must be a list", field + ".gpuDevices");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& d = (*it)[i];
      if (!d.is_number_integer() || d.get<int>() < 0) {
        return Status::InvalidArgument("must be a non-negative device index",
                                       field + ".gpuDevices[" + std::to_string(i) + "]");
      }
      s.gpu_devices.push_back(d.get<int>());
    }
    if (static_cast<int64_t>(s.gpu_devices.size()) != s.gpus) {
      return Status::InvalidArgument(
          "must list exactly `gpus` (" + std::to_string(s.gpus) + ") device indices",
          field + ".gpuDevices");
    }
  }
  if (auto it = n.find("labels"); it != n.end() && !it->is_null()) {
    if (!it->is_object()) return Status::InvalidArgument("must be a mapping", field + ".labels");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) {
        return Status::InvalidArgument("label values must be strings", field + ".labels." + k);
      }
      s.labels[k] = v.get<std::string>();
    }
  }
  if (auto it = n.find("taints"); it != n.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("must be a list", field + ".taints");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      const std::string tf = field + ".taints[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("key") || !t["key"].is_string()) {
        return Status::InvalidArgument("must have a string key", tf);
      }
      const std::string effect =
          t.contains("effect") && t["effect"].is_string() ? t["effect"].get<std::string>() : "";
      if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
        return Status::InvalidArgument("must be NoSchedule, PreferNoSchedule or NoExecute",
                                       tf + ".effect");
      }
      json taint = {{"key", t["key"]}, {"effect", effect}};
      if (t.contains("value")) taint["value"] = t["value"];
      s.taints.push_back(taint);
    }
  }
  return s;
}

json Conditions(const std::string& now, const json& old_conditions) {
  // lastTransitionTime only moves when a condition's status changes, as kubelet does.
  auto transition = [&](const std::string& type, const std::string& status) {
    if (old_conditions.is_array()) {
      for (const json& c : old_conditions) {
        if (c.value("type", "") == type && c.value("status", "") == status &&
            c.contains("lastTransitionTime")) {
          return c["lastTransitionTime"].get<std::string>();
        }
      }
    }
    return now;
  };
  auto cond = [&](const std::string& type, const std::string& status, const std::string& reason,
                  const std::string& message) {
    return json{{"type", type},
                {"status", status},
                {"reason", reason},
                {"message", message},
                {"lastHeartbeatTime", now},
                {"lastTransitionTime", transition(type, status)}};
  };
  return json::array({
      cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
           "kubelet has sufficient memory available"),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      cond("PIDPressure", "False", "KubeletHasSufficientPID",
           "kubelet has sufficient PID available"),
      cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
  });
}

}  // namespace

Result<ClusterConfig> ParseClusterConfig(std::string_view yaml_text) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<json> docs, yaml::ParseDocuments(yaml_text));
  if (docs.size() != 1 || !docs[0].is_object()) {
    return Status::InvalidArgument("the cluster config must be one YAML mapping with `nodes`");
  }
  const json& root = docs[0];
  for (const auto& [key, _] : root.items()) {
    if (key != "nodes") return Status::InvalidArgument("unknown field (known: nodes)", key);
  }
  auto nodes = root.find("nodes");
  if (nodes == root.end() || !nodes->is_array() || nodes->empty()) {
    return Status::InvalidArgument("must be a non-empty list of nodes", "nodes");
  }
  ClusterConfig config;
  std::set<std::string> names;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const std::string field = "nodes[" + std::to_string(i) + "]";
    SLUICE_ASSIGN_OR_RETURN(NodeSpec spec, ParseNode((*nodes)[i], field));
    if (!names.insert(spec.name).second) {
      return Status::InvalidArgument("duplicate node name \"" + spec.name + "\"", field + ".name");
    }
    config.nodes.push_back(std::move(spec));
  }
  return config;
}

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return Status::NotFound("cannot read cluster config " + path);
  Result<ClusterConfig> config = ParseClusterConfig(*text);
  if (!config.ok()) {
    const Status& s = config.status();
    return Status(s.code(),
                  path + ": " + (s.field().empty() ? "" : s.field() + ": ") + s.message());
  }
  return config;
}

json NodeLabels(const NodeSpec& spec, const std::string& agent_name) {
  json labels = json::object();
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  labels[kHostnameLabel] = spec.name;
  labels["kubernetes.io/os"] = "linux";
  labels["kubernetes.io/arch"] = "amd64";
  labels["node.kubernetes.io/instance-type"] = "sluice-local";
  labels[kRegionLabel] = spec.region;
  labels[kZoneLabel] = spec.zone;
  if (spec.gpus > 0) {
    labels[kGpuProductLabel] = spec.gpu_product;
    labels[kGpuCountLabel] = std::to_string(spec.gpus);
  }
  labels[kAgentLabel] = agent_name;
  return labels;
}

json NodeCapacity(const NodeSpec& spec) {
  json capacity = {{"cpu", spec.cpu},
                   {"memory", spec.memory},
                   {"pods", std::to_string(spec.pods)},
                   {"ephemeral-storage", "100Gi"}};
  if (spec.gpus > 0) capacity[kGpuResource] = std::to_string(spec.gpus);
  return capacity;
}

json NodeStatus(const NodeSpec& spec, const KubeletEndpoint& endpoint, const std::string& now,
                const json& old_conditions) {
  return json{{"capacity", NodeCapacity(spec)},
              {"allocatable", NodeCapacity(spec)},
              {"conditions", Conditions(now, old_conditions)},
              {"addresses", json::array({{{"type", "InternalIP"}, {"address", endpoint.address}},
                                         {{"type", "Hostname"}, {"address", spec.name}}})},
              {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", endpoint.port}}}}},
              {"nodeInfo",
               {{"architecture", "amd64"},
                {"operatingSystem", "linux"},
                {"osImage", "sluice local cluster"},
                {"kernelVersion", ""},
                {"kubeletVersion", "v1.32.0-sluice"},
                {"kubeProxyVersion", ""},
                {"containerRuntimeVersion", "sluice-process://0.1.0"},
                {"machineID", spec.name},
                {"systemUUID", spec.name},
                {"bootID", ""}}},
              {"phase", "Running"}};
}

json NodeObject(const NodeSpec& spec, const std::string& agent_name,
                const KubeletEndpoint& endpoint, const std::string& now) {
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}, {"labels", NodeLabels(spec, agent_name)}}},
               {"spec", json::object()},
               {"status", NodeStatus(spec, endpoint, now, json::array())}};
  if (!spec.taints.empty()) node["spec"]["taints"] = spec.taints;
  return node;
}

}  // namespace sluice::node
