#include "localcluster/cli/status_report.h"

#include <algorithm>

namespace sluice::cli {
namespace {

using nlohmann::json;

const json* Path(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* key : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string Text(const json* value, const std::string& fallback) {
  if (value == nullptr || value->is_null()) return fallback;
  if (value->is_string()) return value->get<std::string>();
  return value->dump();
}

}  // namespace

std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      if (i + 1 == widths.size()) {
        out += cell;
      } else {
        out += cell + std::string(widths[i] - cell.size() + 2, ' ');
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string RenderComponents(const std::vector<ComponentRow>& rows) {
  std::vector<std::vector<std::string>> cells;
  for (const ComponentRow& r : rows) cells.push_back({r.name, r.state});
  return RenderTable({"COMPONENT", "STATE"}, cells);
}

std::vector<std::string> NodeRow(const json& node) {
  std::string ready = "Unknown";
  if (const json* conditions = Path(node, {"status", "conditions"});
      conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (c.is_object() && c.value("type", "") == "Ready") ready = Text(Path(c, {"status"}), ready);
    }
  }
  const json* labels = Path(node, {"metadata", "labels"});
  const json* region =
      labels != nullptr && labels->is_object() && labels->contains("topology.kubernetes.io/region")
          ? &(*labels)["topology.kubernetes.io/region"]
          : nullptr;
  const json* allocatable = Path(node, {"status", "allocatable"});
  const json* gpus =
      allocatable != nullptr && allocatable->is_object() && allocatable->contains("nvidia.com/gpu")
          ? &(*allocatable)["nvidia.com/gpu"]
          : nullptr;
  return {Text(Path(node, {"metadata", "name"}), "?"), ready, Text(region, "-"), Text(gpus, "0"),
          Text(Path(node, {"spec", "unschedulable"}), "false")};
}

std::string RenderNodes(const std::vector<json>& nodes) {
  if (nodes.empty()) return "No nodes.\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& node : nodes) rows.push_back(NodeRow(node));
  std::sort(rows.begin(), rows.end());
  return RenderTable({"NODE", "READY", "REGION", "GPUS", "UNSCHEDULABLE"}, rows);
}

ResourceCount CountResources(const std::string& resource, const std::vector<json>& items,
                             bool with_phases) {
  ResourceCount count;
  count.resource = resource;
  count.count = items.size();
  if (with_phases) {
    for (const json& item : items) ++count.phases[Text(Path(item, {"status", "phase"}), "")];
  }
  return count;
}

std::string RenderResourceCounts(const std::vector<ResourceCount>& counts) {
  std::vector<std::vector<std::string>> rows;
  for (const ResourceCount& c : counts) {
    std::string cell = c.count ? std::to_string(*c.count) : "-";
    std::string detail;
    if (!c.count) {
      detail = "(" + c.note + ")";
    } else if (!c.phases.empty()) {
      for (const auto& [phase, n] : c.phases) {
        detail += (detail.empty() ? "" : ", ") + (phase.empty() ? "no phase" : phase) + " " +
                  std::to_string(n);
      }
      detail = "(" + detail + ")";
    }
    rows.push_back({c.resource, detail.empty() ? cell : cell + "  " + detail});
  }
  return RenderTable({"RESOURCE", "COUNT"}, rows);
}

}  // namespace sluice::cli
