// The text `sluice status` prints, rendered from plain values and API objects (no I/O here).
//
//   COMPONENT   STATE
//   apiserver   running (pid 4242)
//   node        unhealthy (pid 4250): http://127.0.0.1:10250/readyz: connection refused
//   operator    stopped
//
//   NODE      READY  REGION     GPUS  UNSCHEDULABLE
//   gpu-a-0   True   us-east-1  8     false
//
//   RESOURCE      COUNT
//   policies      2
//   trainerjobs   3  (Running 2, Succeeded 1)
//
// Columns are left-aligned and separated by at least two spaces, as kubectl prints them.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {

// Aligned columns; every row should have the header's width (missing cells print empty).
std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

struct ComponentRow {
  std::string name;
  std::string state;  // "running (pid 12)", "stopped", "unhealthy (pid 12): reason".
};
std::string RenderComponents(const std::vector<ComponentRow>& rows);

// One row of the nodes table from a v1 Node: name, Ready condition status ("Unknown" when
// absent), label topology.kubernetes.io/region ("-" when absent), status.allocatable
// nvidia.com/gpu ("0" when absent), spec.unschedulable ("false" when absent).
std::vector<std::string> NodeRow(const nlohmann::json& node);
// "No nodes." when empty.
std::string RenderNodes(const std::vector<nlohmann::json>& nodes);

struct ResourceCount {
  std::string resource;                  // "trainerjobs".
  std::optional<size_t> count;           // nullopt: could not be listed (see note).
  std::string note;                      // "CRD not installed", or the error.
  std::map<std::string, size_t> phases;  // status.phase -> count (TrainerJobs); "" unset.
};

// Counts `items`, with their status.phase tallied when `with_phases`.
ResourceCount CountResources(const std::string& resource, const std::vector<nlohmann::json>& items,
                             bool with_phases);
std::string RenderResourceCounts(const std::vector<ResourceCount>& counts);

}  // namespace sluice::cli
