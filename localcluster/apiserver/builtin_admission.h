// Kube's defaulting and kind-specific validation of the built-in resources that have rules of
// their own, behind one call so the API server's write path (api_server_admission.cpp, Admit) needs
// no per-kind code: apps/v1 Deployments and ReplicaSets (workload_admission.h) and
// networking.k8s.io/v1 NetworkPolicies (network_policy_admission.h). Every other resource,
// custom resources included, passes untouched with no errors.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "common/openapi/field_error.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {

// Defaults `object` (a create's body, or an update's merged result) in place, then validates
// it; `old_object` is the stored object on update and null on create (updates add kube's update
// rules, such as the immutable selectors of workloads). Fields in errors are paths from the
// object root.
openapi::FieldErrors DefaultAndValidateBuiltin(const ResourceInfo& resource, nlohmann::json& object,
                                               const nlohmann::json* old_object);

}  // namespace sluice::apiserver
