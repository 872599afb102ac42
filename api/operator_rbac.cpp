#include "api/operator_rbac.h"

namespace sluice::api {
namespace {

using nlohmann::json;

constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";

json Rules(bool own_namespace) {
  json rules = json::array();
  for (const OperatorRbacRule& r : OperatorRbacRules()) {
    if (r.own_namespace_only != own_namespace) continue;
    rules.push_back({{"apiGroups", r.api_groups}, {"resources", r.resources}, {"verbs", r.verbs}});
  }
  return rules;
}

json Binding(const char* kind, const char* role_kind, const std::string& name,
             const std::string& namespace_, const std::string& service_account, bool namespaced) {
  json binding = {
      {"apiVersion", std::string(kRbacGroup) + "/v1"},
      {"kind", kind},
      {"metadata", {{"name", name}}},
      {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", role_kind}, {"name", name}}},
      {"subjects",
       {{{"kind", "ServiceAccount"}, {"name", service_account}, {"namespace", namespace_}}}}};
  if (namespaced) binding["metadata"]["namespace"] = namespace_;
  return binding;
}

}  // namespace

const std::vector<OperatorRbacRule>& OperatorRbacRules() {
  static const std::vector<OperatorRbacRule> kRules = {
      {{"sluice.dev"},
       {"dataflows", "policies", "rolloutpools", "trainerjobs"},
       {"get", "list", "watch", "update", "patch"},
       false,
       "informers; finalizers and annotations on the main resources"},
      {{"sluice.dev"},
       {"trainerjobs"},
       {"delete"},
       false,
       "a Policy replaces the TrainerJob it owns"},
      {{"sluice.dev"},
       {"dataflows/status", "policies/status", "rolloutpools/status", "trainerjobs/status"},
       {"get", "update", "patch"},
       false,
       "each controller writes its kind's status"},
      {{"sluice.dev"},
       {"rolloutpools/scale"},
       {"get", "update", "patch"},
       false,
       "the autoscaler sets a pool's replicas"},
      {{"sluice.dev"},
       {"dataflows/finalizers", "policies/finalizers", "rolloutpools/finalizers",
        "trainerjobs/finalizers"},
       {"update"},
       false,
       "owner references with blockOwnerDeletion on the children (kube's "
       "OwnerReferencesPermissionEnforcement)"},
      {{""},
       {"pods", "services", "configmaps", "secrets", "persistentvolumeclaims"},
       {"get", "list", "watch", "create", "update", "patch", "delete"},
       false,
       "the workers, their Services, config, credentials and claims"},
      {{"networking.k8s.io"},
       {"networkpolicies"},
       {"list", "watch", "create", "update", "delete"},
       false,
       "the NetworkPolicies of each experiment (the Dataflow controller) and of each TrainerJob's "
       "gang (the TrainerJob controller) (their informer; switched off: deleted)"},
      {{""}, {"events"}, {"create", "patch"}, false, "events on the Sluice objects"},
      {{"coordination.k8s.io"}, {"leases"}, {"get", "create", "update"}, true, "leader election"},
  };
  return kRules;
}

std::vector<json> OperatorRbacObjects(const std::string& namespace_,
                                      const std::string& service_account) {
  const std::string api_version = std::string(kRbacGroup) + "/v1";
  const std::string leader = service_account + "-leader-election";
  json cluster_role = {{"apiVersion", api_version},
                       {"kind", "ClusterRole"},
                       {"metadata", {{"name", service_account}}},
                       {"rules", Rules(false)}};
  json role = {{"apiVersion", api_version},
               {"kind", "Role"},
               {"metadata", {{"name", leader}, {"namespace", namespace_}}},
               {"rules", Rules(true)}};
  return {cluster_role,
          Binding("ClusterRoleBinding", "ClusterRole", service_account, namespace_, service_account,
                  false),
          role, Binding("RoleBinding", "Role", leader, namespace_, service_account, true)};
}

}  // namespace sluice::api
