// Table output (meta.k8s.io/v1 Table) for the built-in resources, so that `kubectl get pods`,
// `kubectl get nodes -o wide` and friends print the columns a real cluster prints.
//
// kube-apiserver renders built-ins with hand-written printers rather than JSONPath columns; this
// file reproduces their column definitions (names, types, formats, priorities: priority 1 is shown
// only with -o wide) and their cell logic (a pod's STATUS from its container states, a node's
// Ready condition, a service's PORT(S), an event's LAST SEEN from either event schema, ...). As in
// kube-apiserver, every row carries the wide cells too; kubectl drops the columns it does not show.
// Resources without a dedicated printer get Name and Age. Custom resources use table.h instead.
//
// Thread safety: pure functions; `now` is passed in.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/table.h"

namespace sluice::apiserver {

// The columns kube-apiserver declares for a built-in resource (json_path is empty: cells come from
// the printers, not from JSONPath).
std::vector<PrinterColumn> BuiltinPrinterColumns(const ResourceInfo& info);

// The Table for `objects` of the built-in resource `info` (objects as stored: JSON of that
// resource's apiVersion). An element that is not a JSON object is an InvalidArgument error.
Result<nlohmann::json> BuildBuiltinTable(const ResourceInfo& info,
                                         const std::vector<nlohmann::json>& objects,
                                         Clock::WallTime now, std::string_view resource_version,
                                         IncludeObject include = IncludeObject::kMetadata);

}  // namespace sluice::apiserver
