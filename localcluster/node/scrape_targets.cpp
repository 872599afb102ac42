#include "localcluster/node/scrape_targets.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/json/fields.h"

namespace sluice::node {

using nlohmann::json;

namespace {

// The value of a label or annotation ("" when absent); keys hold '/', so no JSON pointer.
std::string MapValue(const json& pod, const char* map, const std::string& key) {
  const auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return "";
  const auto m = meta->find(map);
  if (m == meta->end() || !m->is_object()) return "";
  const auto it = m->find(key);
  return it != m->end() && it->is_string() ? it->get<std::string>() : "";
}

// A port number 1..65535 written in decimal, as the conventional relabelling's (\d+) accepts.
std::optional<int> ParsePort(const std::string& text) {
  const auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), digit)) {
    return std::nullopt;
  }
  const int port = std::stoi(text);
  return port >= 1 && port <= 65535 ? std::optional<int>(port) : std::nullopt;
}

// The annotated port, else every TCP container port; empty when the annotation is malformed.
std::vector<int> Ports(const json& pod) {
  const std::string annotated = MapValue(pod, "annotations", kScrapePortAnnotation);
  if (!annotated.empty()) {
    const std::optional<int> port = ParsePort(annotated);
    return port ? std::vector<int>{*port} : std::vector<int>{};
  }
  std::vector<int> ports;
  const json::json_pointer containers("/spec/containers");
  if (!pod.contains(containers) || !pod.at(containers).is_array()) return ports;
  // Checked field by field: the local API server does not validate pod specs.
  for (const json& c : pod.at(containers)) {
    const auto list = c.find("ports");  // end() for a non-object too.
    if (list == c.end() || !list->is_array()) continue;
    for (const json& p : *list) {
      const auto number = p.find("containerPort");
      const auto protocol = p.find("protocol");
      if (number == p.end() || !number->is_number_integer()) continue;
      if (protocol != p.end() && *protocol != "TCP") continue;
      const int port = number->get<int>();
      if (port >= 1 && port <= 65535 &&
          std::find(ports.begin(), ports.end(), port) == ports.end()) {
        ports.push_back(port);
      }
    }
  }
  return ports;
}

}  // namespace

json PodScrapeTargets(const std::vector<json>& pods) {
  std::vector<std::pair<std::string, json>> groups;  // ("<ns>/<name>", group), for sorting.
  for (const json& pod : pods) {
    const std::string ip = StringAt(pod, "/status/podIP");
    if (ip.empty() || StringAt(pod, "/status/phase") != "Running" ||
        MapValue(pod, "annotations", kScrapeAnnotation) != "true") {
      continue;
    }
    const std::vector<int> ports = Ports(pod);
    if (ports.empty()) continue;
    const std::string ns = StringAt(pod, "/metadata/namespace");
    const std::string name = StringAt(pod, "/metadata/name");
    json targets = json::array();
    for (int port : ports) targets.push_back(ip + ":" + std::to_string(port));
    const std::string path = MapValue(pod, "annotations", kScrapePathAnnotation);
    json labels = {{"__metrics_path__", path.empty() ? "/metrics" : path},
                   {"namespace", ns.empty() ? "default" : ns},
                   {"pod", name}};
    const std::string scheme = MapValue(pod, "annotations", kScrapeSchemeAnnotation);
    if (scheme == "http" || scheme == "https") labels["__scheme__"] = scheme;
    for (const auto& [pod_label, target_label] : kScrapeLabels) {
      const std::string value = MapValue(pod, "labels", pod_label);
      if (!value.empty()) labels[target_label] = value;
    }
    groups.emplace_back(ns + "/" + name, json{{"targets", targets}, {"labels", labels}});
  }
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  json out = json::array();
  for (auto& [_, group] : groups) out.push_back(std::move(group));
  return out;
}

}  // namespace sluice::node
