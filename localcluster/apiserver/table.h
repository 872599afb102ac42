// Table output (meta.k8s.io/v1 Table) for `kubectl get`: the columns of a CRD version's
// additionalPrinterColumns (Name first; Name and Age when it declares none) and one row per
// object, with cells typed the way kube-apiserver types them (date columns become ages such
// as "5m" or "3d4h"). As in kube, a cell shows only the first value its JSONPath selects: a
// `[*]` column over a list of three shows the first item alone.
//
// Thread safety: pure functions; `now` is passed in.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace sluice::apiserver {

struct PrinterColumn {
  std::string name;
  std::string type;  // string, integer, number, boolean, date.
  std::string format;
  std::string description;
  std::string json_path;  // Empty for the Name column (metadata.name).
  int priority = 0;       // 0: shown by default; higher: only with -o wide.
};

// The columns of `version` of a CustomResourceDefinition (JSON).
std::vector<PrinterColumn> PrinterColumnsFor(const nlohmann::json& crd, std::string_view version);

// kube's human-readable duration: "45s", "5m30s", "3h", "2d5h", "400d", "3y20d".
std::string HumanDuration(std::chrono::seconds d);

// What each row carries besides its cells (the includeObject query parameter).
enum class IncludeObject { kNone, kMetadata, kObject };

// The `object` member of a row for `include` (absent for kNone: returns null).
nlohmann::json TableRowObject(const nlohmann::json& object, IncludeObject include);
// A meta.k8s.io/v1 Table document from its column definitions and rows.
nlohmann::json MakeTable(nlohmann::json column_definitions, nlohmann::json rows,
                         std::string_view resource_version);

// The Table for `objects`. A column whose JSONPath the subset cannot evaluate is an error naming
// it (jsonpath.h).
Result<nlohmann::json> BuildTable(const std::vector<PrinterColumn>& columns,
                                  const std::vector<nlohmann::json>& objects, Clock::WallTime now,
                                  std::string_view resource_version,
                                  IncludeObject include = IncludeObject::kMetadata);

}  // namespace sluice::apiserver
