// The Helm chart's RBAC template (helm/sluice/templates/rbac.yaml), generated from the operator's
// one table of calls (OperatorRbacRules), so that the chart grants exactly what `sluice up`
// grants. `sluice-chart-rbac` writes the file; ChartRbacTest fails while the committed file
// differs from RenderChartRbacTemplate().
//
// The template uses the chart's helpers sluice.operatorName, sluice.serviceAccountName and
// sluice.labels (templates/_helpers.tpl) and the values rbac.create, operator.watchNamespaces
// and operator.leaderElection.enabled:
//   * the cluster-wide rules become a ClusterRole and ClusterRoleBinding, or, with
//     operator.watchNamespaces, a Role and RoleBinding in each watched namespace (the operator
//     reads no cluster-scoped objects, so the Roles grant all it needs there);
//   * the own-namespace rules (the leader-election Lease) become a Role and RoleBinding
//     `<operator>-leader-election` in the release's namespace, rendered only with leader
//     election on.
//
// Thread safety: pure function over constant data.
#pragma once

#include <string>

namespace sluice::api {

// Where the generated template lives, relative to the repository root.
inline constexpr char kChartRbacTemplatePath[] = "helm/sluice/templates/rbac.yaml";

// The template's text, byte for byte what the committed file must hold.
std::string RenderChartRbacTemplate();

}  // namespace sluice::api
