// The operator's RBAC: every verb on every resource sluice-operator calls, in one table, and the
// Kubernetes objects that grant exactly that to its ServiceAccount. `sluice up` installs them and
// runs the operator with that ServiceAccount's token, so the local cluster's RBAC refuses
// (403, in the operator's log and the API server's access log) any call the table lacks. The Helm
// chart's RBAC template (helm/sluice/templates/rbac.yaml) is generated from the same table
// (operator_rbac_chart.h, `build/bin/sluice-chart-rbac`), so it grants the same rules.
//
// Thread safety: pure functions over constant data.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::api {

// The operator's identity as `sluice up` installs it (the chart's too, for release "sluice" in
// namespace sluice-system).
inline constexpr char kOperatorNamespace[] = "sluice-system";
inline constexpr char kOperatorServiceAccount[] = "sluice-operator";

struct OperatorRbacRule {
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;  // Plural, or "plural/subresource".
  std::vector<std::string> verbs;
  bool own_namespace_only = false;  // Granted by a Role in the operator's namespace.
  std::string why;                  // Who calls it.
};

// The table.
const std::vector<OperatorRbacRule>& OperatorRbacRules();

// The objects granting the table to ServiceAccount `service_account` in `namespace_`: a
// ClusterRole and ClusterRoleBinding named `service_account` (cluster-wide rules), and a Role
// and RoleBinding `<service_account>-leader-election` in `namespace_` (own-namespace rules), in
// creation order. JSON objects with apiVersion and kind.
std::vector<nlohmann::json> OperatorRbacObjects(const std::string& namespace_,
                                                const std::string& service_account);

}  // namespace sluice::api
