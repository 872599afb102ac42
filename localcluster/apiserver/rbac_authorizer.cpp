#include "localcluster/apiserver/rbac_authorizer.h"

#include <algorithm>
#include <optional>

#include "common/go_quote.h"
#include "common/json/fields.h"
#include "localcluster/apiserver/rbac_objects.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";
constexpr char kRbacApiVersion[] = "rbac.authorization.k8s.io/v1";
constexpr char kUnauthenticatedGroup[] = "system:unauthenticated";

bool MatchesOrStar(const Strings& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& item) { return item == "*" || item == value; });
}

// Only "*" and "*/<subresource>" are wildcards; "pods" does not cover "pods/log" and "pods/*"
// is a literal, as in kube.
bool ResourceMatches(const Strings& rule_resources, const AuthorizationAttributes& a) {
  const std::string combined =
      a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  for (const std::string& r : rule_resources) {
    if (r == "*" || r == combined) return true;
    if (!a.subresource.empty() && r == "*/" + a.subresource) return true;
  }
  return false;
}

// An empty name (list, create) is never covered by a rule that names objects.
bool ResourceNameMatches(const Strings& names, const std::string& name) {
  if (names.empty()) return true;
  return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
}

bool NonResourceUrlMatches(const Strings& urls, const std::string& path) {
  for (const std::string& url : urls) {
    if (url == "*" || url == path) return true;
    if (!url.empty() && url.back() == '*' && path.starts_with(url.substr(0, url.size() - 1))) {
      return true;
    }
  }
  return false;
}

bool RuleAllows(const json& rule, const AuthorizationAttributes& a) {
  if (!MatchesOrStar(RbacStringList(rule, "verbs"), a.verb)) return false;
  if (!a.resource_request)
    return NonResourceUrlMatches(RbacStringList(rule, "nonResourceURLs"), a.path);
  return MatchesOrStar(RbacStringList(rule, "apiGroups"), a.group) &&
         ResourceMatches(RbacStringList(rule, "resources"), a) &&
         ResourceNameMatches(RbacStringList(rule, "resourceNames"), a.name);
}

bool RoleAllows(const json* role, const AuthorizationAttributes& a) {
  if (role == nullptr) return false;  // A binding to a missing role grants nothing.
  const json& rules = AnyField(*role, "rules");
  if (!rules.is_array()) return false;
  return std::any_of(rules.begin(), rules.end(),
                     [&](const json& rule) { return RuleAllows(rule, a); });
}

// The first of the binding's subjects that is `user`, described as kube's reasons name it
// (`User "u"`, `ServiceAccount "name/namespace"`); nullopt when none is.
std::optional<std::string> MatchingSubject(const json& binding, const UserInfo& user,
                                           const std::string& binding_namespace) {
  const json& subjects = AnyField(binding, "subjects");
  if (!subjects.is_array()) return std::nullopt;
  for (const json& subject : subjects) {
    const std::string kind = StringField(subject, "kind");
    const std::string name = StringField(subject, "name");
    if (kind == "User" && name == user.name) return "User " + GoQuote(name);
    if (kind == "Group" && user.InGroup(name)) return "Group " + GoQuote(name);
    if (kind == "ServiceAccount") {
      std::string ns = StringField(subject, "namespace");
      if (ns.empty()) ns = binding_namespace;
      if (ns.empty()) continue;  // No namespace to name the account by.
      if (ServiceAccountUsername(ns, name) == user.name) {
        std::string account = name;
        account += '/';
        account += ns;
        return "ServiceAccount " + GoQuote(account);
      }
    }
  }
  return std::nullopt;
}

// Kube's reason for an allow, e.g.
// `RBAC: allowed by RoleBinding "b/ns" of ClusterRole "r" to User "u"`.
std::string AllowedBy(const char* binding_kind, const std::string& binding,
                      const std::string& role_kind, const std::string& role,
                      const std::string& subject) {
  std::string reason = "RBAC: allowed by ";
  reason += binding_kind;
  reason += ' ';
  reason += GoQuote(binding);
  reason += " of ";
  reason += role_kind;
  reason += ' ';
  reason += GoQuote(role);
  reason += " to ";
  reason += subject;
  return reason;
}

// ---- Bootstrap policy ----

const Strings kRead = {"get", "list", "watch"};
const Strings kWrite = {"create", "delete", "deletecollection", "patch", "update"};
const Strings kReadWrite = {"create", "delete", "deletecollection", "get",
                            "list",   "patch",  "update",           "watch"};

json ResourceRule(const Strings& verbs, const Strings& api_groups, const Strings& resources) {
  return {{"verbs", verbs}, {"apiGroups", api_groups}, {"resources", resources}};
}

json UrlRule(const Strings& verbs, const Strings& urls) {
  return {{"verbs", verbs}, {"nonResourceURLs", urls}};
}

json BootstrapMetadata(const std::string& name) {
  return {{"name", name},
          {"labels", {{"kubernetes.io/bootstrapping", "rbac-defaults"}}},
          {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}}};
}

json ClusterRole(const std::string& name, json rules) {
  return {{"apiVersion", kRbacApiVersion},
          {"kind", "ClusterRole"},
          {"metadata", BootstrapMetadata(name)},
          {"rules", std::move(rules)}};
}

json GroupBinding(const std::string& role, const Strings& groups) {
  json subjects = json::array();
  for (const std::string& group : groups) {
    subjects.push_back({{"kind", "Group"}, {"apiGroup", kRbacGroup}, {"name", group}});
  }
  return {{"apiVersion", kRbacApiVersion},
          {"kind", "ClusterRoleBinding"},
          {"metadata", BootstrapMetadata(role)},
          {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "ClusterRole"}, {"name", role}}},
          {"subjects", std::move(subjects)}};
}

// view, edit and admin as kube's aggregation would assemble them, limited to the built-in
// resources, the workload groups kube's roles name, and the project's CRDs (crds/*.yaml).
json ViewRules() {
  return json::array({
      ResourceRule(
          kRead, {""},
          {"configmaps", "endpoints", "events", "persistentvolumeclaims",
           "persistentvolumeclaims/status", "pods", "pods/log", "pods/status",
           "replicationcontrollers", "replicationcontrollers/scale",
           "replicationcontrollers/status", "serviceaccounts", "services", "services/status"}),
      ResourceRule(kRead, {""}, {"namespaces", "namespaces/status"}),
      ResourceRule(kRead, {"apps"},
                   {"daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                    "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                    "statefulsets", "statefulsets/scale", "statefulsets/status"}),
      ResourceRule(kRead, {"autoscaling"},
                   {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}),
      ResourceRule(kRead, {"batch"}, {"cronjobs", "cronjobs/status", "jobs", "jobs/status"}),
      ResourceRule(kRead, {"events.k8s.io"}, {"events"}),
      ResourceRule(kRead, {"networking.k8s.io"},
                   {"ingresses", "ingresses/status", "networkpolicies"}),
      ResourceRule(kRead, {"policy"}, {"poddisruptionbudgets", "poddisruptionbudgets/status"}),
      ResourceRule(
          kRead, {"sluice.dev"},
          {"dataflows", "dataflows/status", "policies", "policies/status", "rolloutpools",
           "rolloutpools/scale", "rolloutpools/status", "trainerjobs", "trainerjobs/status"}),
  });
}

// Secrets are readable from edit on, not view: reading them would let a viewer act as any
// ServiceAccount whose token secret exists.
json EditRules() {
  json rules = ViewRules();
  const json more = json::array({
      ResourceRule(kWrite, {""}, {"pods", "pods/attach", "pods/exec", "pods/portforward"}),
      ResourceRule({"create"}, {""}, {"pods/eviction"}),
      ResourceRule(kRead, {""}, {"pods/attach", "pods/exec", "pods/portforward", "secrets"}),
      ResourceRule(
          kWrite, {""},
          {"configmaps", "endpoints", "events", "persistentvolumeclaims", "replicationcontrollers",
           "replicationcontrollers/scale", "secrets", "serviceaccounts", "services"}),
      ResourceRule({"create"}, {""}, {"serviceaccounts/token"}),
      ResourceRule({"impersonate"}, {""}, {"serviceaccounts"}),
      ResourceRule(kWrite, {"apps"},
                   {"daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                    "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"}),
      ResourceRule(kWrite, {"autoscaling"}, {"horizontalpodautoscalers"}),
      ResourceRule(kWrite, {"batch"}, {"cronjobs", "jobs"}),
      ResourceRule(kWrite, {"networking.k8s.io"}, {"ingresses", "networkpolicies"}),
      ResourceRule(kWrite, {"policy"}, {"poddisruptionbudgets"}),
      ResourceRule(kWrite, {"sluice.dev"},
                   {"dataflows", "policies", "rolloutpools", "rolloutpools/scale", "trainerjobs"}),
  });
  rules.insert(rules.end(), more.begin(), more.end());
  return rules;
}

json AdminRules() {
  json rules = EditRules();
  rules.push_back(ResourceRule(kReadWrite, {kRbacGroup}, {"rolebindings", "roles"}));
  rules.push_back(
      ResourceRule({"create"}, {"authorization.k8s.io"}, {"localsubjectaccessreviews"}));
  return rules;
}

}  // namespace

AuthorizationDecision Authorize(const UserInfo& user, const AuthorizationAttributes& attributes,
                                const RbacPolicy& policy) {
  if (user.InGroup(kMastersGroup)) return {true, kMastersGroup};

  for (const json& binding : policy.cluster_role_bindings) {
    const json& role_ref = AnyField(binding, "roleRef");
    if (StringField(role_ref, "kind") != "ClusterRole") continue;
    std::optional<std::string> subject = MatchingSubject(binding, user, "");
    if (!subject) continue;
    const std::string role = StringField(role_ref, "name");
    if (!RoleAllows(FindRbacRole(policy.cluster_roles, role, ""), attributes)) continue;
    return {true, AllowedBy("ClusterRoleBinding", RbacMetadata(binding, "name"), "ClusterRole",
                            role, *subject)};
  }

  // RoleBindings reach only resources in their own namespace: never cluster-scoped or
  // all-namespaces requests, never non-resource URLs.
  if (!attributes.resource_request || attributes.namespace_.empty()) return {};
  for (const json& binding : policy.role_bindings) {
    const std::string ns = RbacMetadata(binding, "namespace");
    if (ns != attributes.namespace_) continue;
    const json& role_ref = AnyField(binding, "roleRef");
    const std::string kind = StringField(role_ref, "kind");
    const std::string role = StringField(role_ref, "name");
    const json* role_object = nullptr;
    if (kind == "Role") {
      role_object = FindRbacRole(policy.roles, role, ns);
    } else if (kind == "ClusterRole") {
      role_object = FindRbacRole(policy.cluster_roles, role, "");
    } else {
      continue;
    }
    std::optional<std::string> subject = MatchingSubject(binding, user, ns);
    if (!subject || !RoleAllows(role_object, attributes)) continue;
    // kube names a RoleBinding "name/namespace".
    std::string name = RbacMetadata(binding, "name");
    name += '/';
    name += ns;
    return {true, AllowedBy("RoleBinding", name, kind, role, *subject)};
  }
  return {};
}

std::string ForbiddenMessage(const UserInfo& user, const AuthorizationAttributes& attributes,
                             const std::string& reason) {
  std::string message;
  if (!attributes.resource_request) {
    message = "forbidden: User " + GoQuote(user.name) + " cannot " + attributes.verb + " path " +
              GoQuote(attributes.path);
  } else {
    std::string qualified = attributes.resource;
    if (!attributes.group.empty()) qualified += "." + attributes.group;
    std::string resource = attributes.resource;
    if (!attributes.subresource.empty()) resource += "/" + attributes.subresource;
    if (qualified.empty()) {
      message = "forbidden: ";
    } else if (attributes.name.empty()) {
      message = qualified + " is forbidden: ";
    } else {
      message = qualified + " " + GoQuote(attributes.name) + " is forbidden: ";
    }
    message += "User " + GoQuote(user.name) + " cannot " + attributes.verb + " resource " +
               GoQuote(resource) + " in API group " + GoQuote(attributes.group);
    message += attributes.namespace_.empty()
                   ? std::string(" at the cluster scope")
                   : " in the namespace " + GoQuote(attributes.namespace_);
  }
  if (!reason.empty()) message += ": " + reason;
  return message;
}

std::vector<json> BootstrapClusterRoles() {
  const Strings health = {"/healthz", "/livez", "/readyz", "/version", "/version/"};
  Strings discovery = {"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"};
  discovery.insert(discovery.end(), health.begin(), health.end());
  std::sort(discovery.begin(), discovery.end());
  return {
      ClusterRole("cluster-admin",
                  json::array({ResourceRule({"*"}, {"*"}, {"*"}), UrlRule({"*"}, {"*"})})),
      ClusterRole("system:discovery", json::array({UrlRule({"get"}, discovery)})),
      ClusterRole("system:public-info-viewer", json::array({UrlRule({"get"}, health)})),
      ClusterRole(
          "system:basic-user",
          json::array(
              {ResourceRule({"create"}, {"authorization.k8s.io"},
                            {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}),
               ResourceRule({"create"}, {"authentication.k8s.io"}, {"selfsubjectreviews"})})),
      ClusterRole("view", ViewRules()),
      ClusterRole("edit", EditRules()),
      ClusterRole("admin", AdminRules()),
  };
}

std::vector<json> BootstrapClusterRoleBindings() {
  return {
      GroupBinding("cluster-admin", {kMastersGroup}),
      GroupBinding("system:discovery", {kAuthenticatedGroup}),
      GroupBinding("system:basic-user", {kAuthenticatedGroup}),
      GroupBinding("system:public-info-viewer", {kAuthenticatedGroup, kUnauthenticatedGroup}),
  };
}

}  // namespace sluice::apiserver
