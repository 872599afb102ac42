// Discovery documents, in the shapes kubectl reads: /api (APIVersions), /apis (APIGroupList),
// /api/v1 and /apis/<group>/<version> (APIResourceList, subresources listed as "pods/status").
//
// Thread safety: pure functions of the registry passed in.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {

// GET /api.
nlohmann::json CoreApiVersions(std::string_view server_address);
// GET /apis.
nlohmann::json ApiGroupList(const ResourceRegistry& registry);
// GET /apis/<group>: nullopt when no version of the group is served.
std::optional<nlohmann::json> ApiGroup(const ResourceRegistry& registry, std::string_view group);
// GET /api/v1 or /apis/<group>/<version>: nullopt when nothing is served there.
std::optional<nlohmann::json> ApiResourceList(const ResourceRegistry& registry,
                                              std::string_view group, std::string_view version);

}  // namespace sluice::apiserver
