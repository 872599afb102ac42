#include "localcluster/apiserver/builtin_admission.h"

#include "localcluster/apiserver/network_policy_admission.h"
#include "localcluster/apiserver/workload_admission.h"

namespace sluice::apiserver {

openapi::FieldErrors DefaultAndValidateBuiltin(const ResourceInfo& resource, nlohmann::json& object,
                                               const nlohmann::json* old_object) {
  // A CRD may reuse a built-in group's name; only the built-in resources have these rules.
  if (!resource.crd_name.empty()) return {};
  if (resource.group == "apps" && resource.plural == "deployments") {
    DefaultDeployment(object);
    return old_object == nullptr ? ValidateDeployment(object)
                                 : ValidateDeploymentUpdate(*old_object, object);
  }
  if (resource.group == "apps" && resource.plural == "replicasets") {
    DefaultReplicaSet(object);
    return old_object == nullptr ? ValidateReplicaSet(object)
                                 : ValidateReplicaSetUpdate(*old_object, object);
  }
  if (resource.group == "networking.k8s.io" && resource.plural == "networkpolicies") {
    // kube validates an update's spec with the create rules: nothing in it is immutable.
    DefaultNetworkPolicy(object);
    return ValidateNetworkPolicy(object);
  }
  return {};
}

}  // namespace sluice::apiserver
