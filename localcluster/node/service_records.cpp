#include "localcluster/node/service_records.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/json/fields.h"

namespace sluice::node {

using nlohmann::json;

namespace {

const json& Field(const json& obj, const json::json_pointer& ptr) {
  static const json kNull;
  return obj.contains(ptr) ? obj.at(ptr) : kNull;
}

bool IsHeadless(const json& service) { return StringAt(service, "/spec/clusterIP") == "None"; }

// A named targetPort resolved against the pod's container ports; 0 when not found.
int ResolvePort(const json& target, const json* pod) {
  if (target.is_number_integer()) return target.get<int>();
  if (!target.is_string()) return 0;
  const std::string name = target.get<std::string>();
  if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) return std::stoi(name);
  if (pod == nullptr) return 0;
  for (const json& c : Field(*pod, json::json_pointer("/spec/containers"))) {
    for (const json& p : c.value("ports", json::array())) {
      if (p.value("name", "") == name) return p.value("containerPort", 0);
    }
  }
  return 0;
}

}  // namespace

bool SelectorMatches(const json& selector, const json& pod) {
  if (!selector.is_object() || selector.empty()) return false;
  const json& labels = Field(pod, json::json_pointer("/metadata/labels"));
  for (const auto& [k, v] : selector.items()) {
    if (!labels.is_object() || !labels.contains(k) || labels[k] != v) return false;
  }
  return true;
}

bool PodIsReady(const json& pod) {
  if (StringAt(pod, "/status/podIP").empty() || StringAt(pod, "/status/phase") != "Running")
    return false;
  if (pod.contains(json::json_pointer("/metadata/deletionTimestamp"))) return false;
  for (const json& c : Field(pod, json::json_pointer("/status/conditions"))) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

std::optional<json> DesiredEndpoints(const json& service, const std::vector<json>& pods) {
  const json& selector = Field(service, json::json_pointer("/spec/selector"));
  if (!selector.is_object() || selector.empty()) return std::nullopt;
  const std::string ns = StringAt(service, "/metadata/namespace");
  const bool publish_not_ready =
      Field(service, json::json_pointer("/spec/publishNotReadyAddresses")).is_boolean() &&
      Field(service, json::json_pointer("/spec/publishNotReadyAddresses")).get<bool>();
  std::vector<std::pair<std::string, json>> ready, not_ready;
  const json* first_pod = nullptr;
  for (const json& pod : pods) {
    if (StringAt(pod, "/metadata/namespace") != ns || !SelectorMatches(selector, pod)) continue;
    const std::string ip = StringAt(pod, "/status/podIP");
    const std::string phase = StringAt(pod, "/status/phase");
    if (ip.empty() || phase == "Succeeded" || phase == "Failed") continue;
    if (first_pod == nullptr) first_pod = &pod;
    json address = {{"ip", ip},
                    {"targetRef",
                     {{"kind", "Pod"},
                      {"namespace", ns},
                      {"name", StringAt(pod, "/metadata/name")},
                      {"uid", StringAt(pod, "/metadata/uid")}}}};
    if (const std::string node = StringAt(pod, "/spec/nodeName"); !node.empty()) {
      address["nodeName"] = node;
    }
    if (const std::string host = StringAt(pod, "/spec/hostname"); !host.empty()) {
      address["hostname"] = host;
    }
    (PodIsReady(pod) || publish_not_ready ? ready : not_ready).emplace_back(ip, address);
  }
  auto sorted = [](std::vector<std::pair<std::string, json>> v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    json out = json::array();
    for (auto& [_, a] : v) out.push_back(std::move(a));
    return out;
  };
  json endpoints = {
      {"apiVersion", "v1"},
      {"kind", "Endpoints"},
      {"metadata", {{"name", StringAt(service, "/metadata/name")}, {"namespace", ns}}},
      {"subsets", json::array()}};
  if (!ready.empty() || !not_ready.empty()) {
    json subset = json::object();
    if (!ready.empty()) subset["addresses"] = sorted(ready);
    if (!not_ready.empty()) subset["notReadyAddresses"] = sorted(not_ready);
    json ports = json::array();
    for (const json& p : Field(service, json::json_pointer("/spec/ports"))) {
      const json target = p.contains("targetPort") ? p["targetPort"] : p.value("port", json());
      const int port = ResolvePort(target, first_pod);
      if (port <= 0) continue;
      json ep = {{"port", port}, {"protocol", p.value("protocol", "TCP")}};
      if (p.contains("name")) ep["name"] = p["name"];
      ports.push_back(ep);
    }
    if (!ports.empty()) subset["ports"] = ports;
    endpoints["subsets"].push_back(subset);
  }
  return endpoints;
}

bool SameSubsets(const json& a, const json& b) {
  const json empty = json::array();
  const json& sa = a.contains("subsets") && !a["subsets"].is_null() ? a["subsets"] : empty;
  const json& sb = b.contains("subsets") && !b["subsets"].is_null() ? b["subsets"] : empty;
  return sa == sb;
}

std::string HostsFileText(const std::vector<json>& services, const std::vector<json>& pods) {
  std::vector<std::pair<std::string, std::string>> lines;        // (name, ip) in name order
  std::map<std::pair<std::string, std::string>, bool> headless;  // (ns, name)
  for (const json& svc : services) {
    const std::string ns = StringAt(svc, "/metadata/namespace");
    const std::string name = StringAt(svc, "/metadata/name");
    if (IsHeadless(svc)) headless[{ns, name}] = true;
    std::optional<json> ep = DesiredEndpoints(svc, pods);
    if (!ep) continue;
    std::vector<std::string> ips;
    for (const json& subset : (*ep)["subsets"]) {
      for (const json& a : subset.value("addresses", json::array())) {
        ips.push_back(a["ip"].get<std::string>());
      }
    }
    for (const std::string& ip : ips) {
      for (const std::string& fqdn :
           {name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local", name + "." + ns}) {
        lines.emplace_back(fqdn, ip);
      }
    }
  }
  for (const json& pod : pods) {
    const std::string ns = StringAt(pod, "/metadata/namespace");
    const std::string host = StringAt(pod, "/spec/hostname");
    const std::string sub = StringAt(pod, "/spec/subdomain");
    const std::string ip = StringAt(pod, "/status/podIP");
    if (host.empty() || sub.empty() || ip.empty() || !headless.count({ns, sub})) continue;
    const std::string phase = StringAt(pod, "/status/phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    const std::string base = host + "." + sub + "." + ns + ".svc";
    lines.emplace_back(base, ip);
    lines.emplace_back(base + ".cluster.local", ip);
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string text = "# Written by sluice-node: Service and pod names of the local cluster.\n";
  for (const auto& [name, ip] : lines) text += ip + " " + name + "\n";
  return text;
}

std::string AllocateClusterIp(const std::set<std::string>& used) {
  for (int i = 1; i < 65535; ++i) {
    const std::string ip = "10.96." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    if (i % 256 == 0 || i % 256 == 255) continue;
    if (!used.count(ip)) return ip;
  }
  return "";
}

}  // namespace sluice::node
