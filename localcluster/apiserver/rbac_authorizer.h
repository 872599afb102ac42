// RBAC authorization for the local API server: kube's rbac.authorization.k8s.io/v1 rules
// (Role, ClusterRole, RoleBinding, ClusterRoleBinding) evaluated for one request, and kube's
// default ("bootstrap") cluster roles and bindings.
//
// Matching follows kube's RBAC authorizer:
//   - system:masters members are allowed everything, with no binding (kube's superuser group);
//   - ClusterRoleBindings grant their ClusterRole's rules everywhere (cluster-scoped requests,
//     every namespace, non-resource URLs); RoleBindings grant their Role's (same namespace) or
//     ClusterRole's resource rules in the binding's namespace only;
//   - a subject matches a user by name (kind User), by group (kind Group), or a ServiceAccount
//     by "system:serviceaccount:<namespace>:<name>" (a RoleBinding's subject without a namespace
//     means the binding's);
//   - a resource rule matches when the verb is in verbs (or "*"), the group in apiGroups (or
//     "*"), "resource" or "resource/subresource" in resources (or "*", or "*/subresource"), and
//     resourceNames is empty or holds the request's (non-empty) name;
//   - a non-resource rule matches the request path exactly, or as a prefix ending in "*".
// A binding whose role is missing grants nothing. Aggregated ClusterRoles (aggregationRule) are
// not expanded: only their own rules count.
//
// Thread safety: pure functions over the values given.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {

// What is asked, as kube's authorizer.Attributes.
struct AuthorizationAttributes {
  std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection,
                     // impersonate, ...; for non-resource requests the lowercase HTTP method.
  bool resource_request = true;
  std::string group;        // API group, "" for core.
  std::string resource;     // Plural, "pods".
  std::string subresource;  // "status", "log", ... or "".
  std::string name;         // "" for collections and creates.
  std::string namespace_;   // "" for cluster-scoped and all-namespaces requests.
  std::string path;         // Non-resource requests: the URL path ("/version").
};

// The RBAC objects a decision reads: the stored JSON objects as the API serves them.
struct RbacPolicy {
  std::vector<nlohmann::json> roles;                  // rbac.authorization.k8s.io/v1 Role.
  std::vector<nlohmann::json> cluster_roles;          // ClusterRole.
  std::vector<nlohmann::json> role_bindings;          // RoleBinding.
  std::vector<nlohmann::json> cluster_role_bindings;  // ClusterRoleBinding.
};

struct AuthorizationDecision {
  bool allowed = false;
  // Allowed: what allowed it, kube's wording: `RBAC: allowed by ClusterRoleBinding "x" of
  // ClusterRole "y" to User "z"`, or "system:masters". Denied: "" (kube adds no reason when no
  // rule matched).
  std::string reason;
};

AuthorizationDecision Authorize(const UserInfo& user, const AuthorizationAttributes& attributes,
                                const RbacPolicy& policy);

// The message of kube's 403 for a denied request, e.g.
//   pods is forbidden: User "system:serviceaccount:ml:x" cannot list resource "pods" in API
//   group "" in the namespace "ml"
//   pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the
//   namespace "ml"
//   nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope
//   rolloutpools.sluice.dev is forbidden: ... (the group-qualified resource outside the core group)
//   forbidden: User "u" cannot get path "/metrics" (non-resource requests)
// `reason` non-empty is appended after ": ".
std::string ForbiddenMessage(const UserInfo& user, const AuthorizationAttributes& attributes,
                             const std::string& reason = "");

// Kube's default RBAC objects that matter here, as JSON objects to create at start when missing
// (labelled kubernetes.io/bootstrapping=rbac-defaults, annotated
// rbac.authorization.kubernetes.io/autoupdate=true):
//   ClusterRoles cluster-admin (everything, resources and non-resource URLs), system:discovery
//   (get /api, /api/*, /apis, /apis/*, /healthz, /livez, /openapi, /openapi/*, /readyz,
//   /version, /version/), system:public-info-viewer (get /healthz, /livez, /readyz, /version,
//   /version/), system:basic-user (create selfsubjectaccessreviews and selfsubjectrulesreviews in
//   authorization.k8s.io, selfsubjectreviews in authentication.k8s.io), and view, edit, admin
//   written out flat (kube builds them by aggregation) over the built-in resources here;
//   ClusterRoleBindings cluster-admin (Group system:masters), system:discovery and
//   system:basic-user (Group system:authenticated), system:public-info-viewer (Groups
//   system:authenticated and system:unauthenticated).
std::vector<nlohmann::json> BootstrapClusterRoles();
std::vector<nlohmann::json> BootstrapClusterRoleBindings();

}  // namespace sluice::apiserver
