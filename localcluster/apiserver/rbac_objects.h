// Reading stored RBAC objects (Roles, ClusterRoles and their bindings) as JSON, shared by the
// authorizer (rbac_authorizer.h) and the escalation check (rbac_escalation.h). Stored and
// written objects may miss fields or hold ill-typed ones: those read as empty.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::apiserver {

// The strings of the array `object[key]`; items that are not strings are skipped.
std::vector<std::string> RbacStringList(const nlohmann::json& object, const char* key);

// `object.metadata[key]` as a string ("" when absent or not a string).
std::string RbacMetadata(const nlohmann::json& object, const char* key);

// The role of `roles` with this name in `namespace_` ("" for ClusterRoles, which have none);
// null when there is none. Points into `roles`.
const nlohmann::json* FindRbacRole(const std::vector<nlohmann::json>& roles,
                                   const std::string& name, const std::string& namespace_);

}  // namespace sluice::apiserver
