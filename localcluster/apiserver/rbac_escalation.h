// Kube's RBAC escalation prevention for the local API server: a user may create or update a
// Role, ClusterRole, RoleBinding or ClusterRoleBinding only when that grants nothing the user
// does not already hold, unless RBAC gives them the `escalate` verb on the role (roles,
// clusterroles) or the `bind` verb on the referenced role (bindings). system:masters bypass it.
// This mirrors kube-apiserver's pkg/registry/rbac (escalation_check, the policy-based role and
// binding storage) and validation.ConfirmNoEscalation.
//
// Coverage (kube's validation.Covers): each requested rule is broken into atomic rules (one
// apiGroup, one resource, one verb and at most one resourceName; or one nonResourceURL and one
// verb), and each atomic rule must be covered by a single held rule: its verbs hold the verb or
// "*", its apiGroups the group or "*", its resources the resource, "*", or "*/<sub>" for
// "<resource>/<sub>"; its resourceNames are empty or (when the atomic rule names one) hold the
// name; its nonResourceURLs hold the URL or a prefix of it ending in "*". A requested "*" is only
// covered by a held "*". An atomic rule without a resourceName is not covered by a held rule
// that lists names.
//
// Refusals are kube's 403 Forbidden, e.g.
//   roles.rbac.authorization.k8s.io "x" is forbidden: user "u" (groups=["g1" "g2"]) is
//   attempting to grant RBAC permissions not currently held:
//   {APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}
// (one line per missing rule: atomic rules differing only in verb merged, then sorted and
// deduplicated; "; resolution errors: [...]" appended when one of the user's own bindings names a
// missing role).
//
// Thread safety: pure functions over the values given (AdmitRbacWrite calls its reader).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "localcluster/apiserver/rbac_authorizer.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

// The write being checked, as kube's RequestInfo names it.
struct RbacWrite {
  std::string group;       // The request's API group; only rbac.authorization.k8s.io is checked.
  std::string resource;    // roles, clusterroles, rolebindings or clusterrolebindings.
  std::string namespace_;  // The request's namespace; "" for the cluster-scoped two.
  // The object name in the request path: "" for a create (POST to the collection), as in kube,
  // so an `escalate` rule limited by resourceNames helps only updates.
  std::string name;
};

// Whether writes of `resource` in `group` are checked (the four RBAC resources).
bool IsEscalationChecked(std::string_view group, std::string_view resource);

// The rules `user` holds in `namespace_`, as kube's rule resolver gathers them: the ClusterRoles
// of every ClusterRoleBinding naming the user, then (when `namespace_` is not empty) the Roles or
// ClusterRoles of the RoleBindings in `namespace_` naming the user, every rule of each
// (non-resource ones too), in policy order. A binding whose role is missing adds kube's error for
// it to
// `*resolution_errors` when given: `roles.rbac.authorization.k8s.io "x" not found`,
// `clusterroles.rbac.authorization.k8s.io "x" not found`, `unsupported role reference kind: "K"`,
// or "Namespace parameter required." for a ClusterRoleBinding naming a Role.
std::vector<nlohmann::json> RulesHeldBy(const UserInfo& user, const std::string& namespace_,
                                        const RbacPolicy& policy,
                                        std::vector<std::string>* resolution_errors = nullptr);

// The atomic rules of `requested_rules` (a JSON array of PolicyRules) that no rule of `held`
// covers, in kube's breakdown order: per requested rule, apiGroups, then resources, then verbs,
// then resourceNames, then its nonResourceURLs by verb. Each is a PolicyRule object with
// one-element lists: {apiGroups, resources, verbs[, resourceNames]} or {nonResourceURLs, verbs}.
std::vector<nlohmann::json> UncoveredRules(const std::vector<nlohmann::json>& held,
                                           const nlohmann::json& requested_rules);

// A PolicyRule as kube's escalation messages print it (rbacv1helpers.CompactString): the non-empty
// lists among APIGroups, Resources, NonResourceURLs, ResourceNames, Verbs, each as Go's %q of a
// string slice, e.g. `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.
std::string CompactRuleString(const nlohmann::json& rule);

// The lines of kube's message for `uncovered` (UncoveredRules' output): atomic resource rules with
// the same apiGroup, resource and resourceName merged into one with their verbs in order
// (duplicates kept, as kube does), non-resource rules as they are; each as CompactRuleString,
// sorted and deduplicated.
std::vector<std::string> MissingRuleDescriptions(const std::vector<nlohmann::json>& uncovered);

// Kube's 403 message for `user` granting `uncovered` on object `name` of `qualified_resource`
// ("roles.rbac.authorization.k8s.io"); `name` "" leaves the quoted name out, as kube does.
std::string EscalationMessage(const std::string& qualified_resource, const std::string& name,
                              const UserInfo& user, const std::vector<nlohmann::json>& uncovered,
                              const std::vector<std::string>& resolution_errors = {});

// The decision for `user` writing `object` (`old_object`: the stored object on an update, null on a
// create) as `write` describes, against `policy`:
//   - OK for other resources, for system:masters, and for an update changing nothing but
//     metadata.ownerReferences, metadata.finalizers and metadata.selfLink (kube lets the garbage
//     collector through);
//   - Role, ClusterRole: OK when Authorize allows verb `escalate` on {write.group,
//     write.resource, write.name, write.namespace_}; else PermissionDenied with EscalationMessage
//     unless the user holds (RulesHeldBy in write.namespace_) every rule of object.rules. A
//     ClusterRole with an aggregationRule (or an update of one that had it) also needs full
//     authority (`*` on `*.*` and on the URL `*`): PermissionDenied `clusterroles.rbac.
//     authorization.k8s.io "x" is forbidden: must have cluster-admin privileges to use the
//     aggregationRule`;
//   - RoleBinding, ClusterRoleBinding: OK when Authorize allows verb `bind` on roleRef's
//     {apiGroup, roles|clusterroles, name} in write.namespace_; else the referenced role's rules
//     (a Role in write.namespace_, or a ClusterRole) must all be held there: a missing role is
//     NotFound (`roles.rbac.authorization.k8s.io "x" not found`), a roleRef kind other than
//     Role and ClusterRole Internal (kube: 500 `unsupported role reference kind: "K"`), and a
//     Role named by a ClusterRoleBinding InvalidArgument ("Namespace parameter required.").
// The object's metadata.name names it in messages.
Status ConfirmNoEscalation(const UserInfo& user, const RbacWrite& write,
                           const nlohmann::json& object, const RbacPolicy& policy,
                           const nlohmann::json* old_object = nullptr);

// The API server's admission step: OK without calling `read_policy` for writes that are not
// checked and for system:masters; else the error of `read_policy` (the server passes
// ReadRbacPolicy over its storage) or ConfirmNoEscalation's decision.
Status AdmitRbacWrite(const UserInfo& user, const RbacWrite& write, const nlohmann::json& object,
                      const nlohmann::json* old_object,
                      const std::function<Result<RbacPolicy>()>& read_policy);

}  // namespace sluice::apiserver
