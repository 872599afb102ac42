// RBAC decisions (rbac_authorizer.h) over hand-made policies: which bindings reach which
// requests, subject and rule matching, kube's 403 wording, and the bootstrap roles.
#include "localcluster/apiserver/rbac_authorizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {
namespace rbac_authorizer_test {

using nlohmann::json;
using Strings = std::vector<std::string>;

// ---- Builders of stored RBAC objects ----

json Rule(const Strings& verbs, const Strings& groups, const Strings& resources,
          const Strings& names = {}) {
  json rule = {{"verbs", verbs}, {"apiGroups", groups}, {"resources", resources}};
  if (!names.empty()) rule["resourceNames"] = names;
  return rule;
}

json UrlRule(const Strings& verbs, const Strings& urls) {
  return {{"verbs", verbs}, {"nonResourceURLs", urls}};
}

json Role(const std::string& ns, const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"rules", std::move(rules)}};
}

json ClusterRole(const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", {{"name", name}}},
          {"rules", std::move(rules)}};
}

json UserSubject(const std::string& name) {
  return {{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", name}};
}

json GroupSubject(const std::string& name) {
  return {{"kind", "Group"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", name}};
}

json SaSubject(const std::string& name, const std::string& ns = "") {
  json subject = {{"kind", "ServiceAccount"}, {"name", name}};
  if (!ns.empty()) subject["namespace"] = ns;
  return subject;
}

json RoleRef(const std::string& kind, const std::string& name) {
  return {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", kind}, {"name", name}};
}

json RoleBinding(const std::string& ns, const std::string& name, const std::string& kind,
                 const std::string& role, json subjects) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"roleRef", RoleRef(kind, role)},
          {"subjects", std::move(subjects)}};
}

json ClusterRoleBinding(const std::string& name, const std::string& role, json subjects,
                        const std::string& kind = "ClusterRole") {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", {{"name", name}}},
          {"roleRef", RoleRef(kind, role)},
          {"subjects", std::move(subjects)}};
}

UserInfo MakeUser(const std::string& name, Strings groups = {kAuthenticatedGroup}) {
  UserInfo user;
  user.name = name;
  user.groups = std::move(groups);
  return user;
}

AuthorizationAttributes Res(const std::string& verb, const std::string& group,
                            const std::string& resource, const std::string& ns,
                            const std::string& name = "", const std::string& subresource = "") {
  AuthorizationAttributes a;
  a.verb = verb;
  a.group = group;
  a.resource = resource;
  a.subresource = subresource;
  a.name = name;
  a.namespace_ = ns;
  return a;
}

AuthorizationAttributes Path(const std::string& verb, const std::string& path) {
  AuthorizationAttributes a;
  a.verb = verb;
  a.resource_request = false;
  a.path = path;
  return a;
}

struct Case {
  std::string name;
  UserInfo user;
  AuthorizationAttributes attributes;
  bool allowed;
  std::string reason = "";  // Checked when non-empty.
};

void ExpectDecisions(const RbacPolicy& policy, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const AuthorizationDecision decision = Authorize(c.user, c.attributes, policy);
    EXPECT_EQ(decision.allowed, c.allowed);
    if (!c.reason.empty()) {
      EXPECT_EQ(decision.reason, c.reason);
    }
    if (!c.allowed) {
      EXPECT_EQ(decision.reason, "");
    }
  }
}

// ---- Bindings ----

TEST(RbacAuthorizerTest, MastersAreAllowedWithoutPolicy) {
  const UserInfo admin = AdminUser();
  for (const AuthorizationAttributes& a :
       {Res("delete", "", "nodes", "", "n1"), Res("get", "", "secrets", "ml", "s"),
        Path("get", "/metrics")}) {
    const AuthorizationDecision decision = Authorize(admin, a, RbacPolicy{});
    EXPECT_TRUE(decision.allowed);
    EXPECT_EQ(decision.reason, "system:masters");
  }
}

TEST(RbacAuthorizerTest, NoBindingDeniesWithoutReason) {
  RbacPolicy policy;
  policy.cluster_roles = {ClusterRole("all", json::array({Rule({"*"}, {"*"}, {"*"})}))};
  const AuthorizationDecision decision =
      Authorize(MakeUser("alice"), Res("list", "", "pods", "ml"), policy);
  EXPECT_FALSE(decision.allowed);
  EXPECT_EQ(decision.reason, "");
}

TEST(RbacAuthorizerTest, RoleBindingsReachTheirNamespaceOnly) {
  RbacPolicy policy;
  policy.roles = {Role("ml", "pod-reader", json::array({Rule({"get", "list"}, {""}, {"pods"})}))};
  policy.cluster_roles = {
      ClusterRole("reader", json::array({Rule({"get", "list"}, {""}, {"configmaps"})}))};
  policy.role_bindings = {
      RoleBinding("ml", "read", "Role", "pod-reader", json::array({UserSubject("alice")})),
      RoleBinding("ml", "cm", "ClusterRole", "reader", json::array({UserSubject("alice")})),
      // The Role is looked up in the binding's namespace, where there is none.
      RoleBinding("dev", "read", "Role", "pod-reader", json::array({UserSubject("alice")})),
  };
  const UserInfo alice = MakeUser("alice");
  ExpectDecisions(
      policy,
      {
          {"Role in its namespace", alice, Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by RoleBinding "read/ml" of Role "pod-reader" to User "alice")"},
          {"Role, named object", alice, Res("get", "", "pods", "ml", "p"), true},
          {"verb not in the Role", alice, Res("delete", "", "pods", "ml", "p"), false},
          {"another namespace", alice, Res("list", "", "pods", "other"), false},
          {"all namespaces", alice, Res("list", "", "pods", ""), false},
          {"Role of another namespace", alice, Res("list", "", "pods", "dev"), false},
          {"ClusterRole in the namespace", alice, Res("list", "", "configmaps", "ml"), true,
           R"(RBAC: allowed by RoleBinding "cm/ml" of ClusterRole "reader" to User "alice")"},
          {"ClusterRole, another namespace", alice, Res("list", "", "configmaps", "x"), false},
          {"ClusterRole, cluster scope", alice, Res("list", "", "configmaps", ""), false},
          {"another user", MakeUser("bob"), Res("list", "", "pods", "ml"), false},
      });
}

TEST(RbacAuthorizerTest, ClusterRoleBindingsReachEverywhere) {
  RbacPolicy policy;
  policy.roles = {Role("ml", "pods", json::array({Rule({"*"}, {""}, {"pods"})}))};
  policy.cluster_roles = {
      ClusterRole("reader", json::array({Rule({"get", "list"}, {""}, {"pods", "nodes"})})),
      ClusterRole("pods", json::array({Rule({"*"}, {"*"}, {"*"})}))};
  policy.cluster_role_bindings = {
      ClusterRoleBinding("read-all", "reader", json::array({UserSubject("alice")})),
      // A ClusterRoleBinding can only name a ClusterRole; this one is ignored.
      ClusterRoleBinding("bad", "pods", json::array({UserSubject("bob")}), "Role"),
  };
  const UserInfo alice = MakeUser("alice");
  const std::string reason =
      R"(RBAC: allowed by ClusterRoleBinding "read-all" of ClusterRole "reader" to User "alice")";
  ExpectDecisions(policy,
                  {
                      {"a namespace", alice, Res("list", "", "pods", "ml"), true, reason},
                      {"another namespace", alice, Res("get", "", "pods", "x", "p"), true, reason},
                      {"all namespaces", alice, Res("list", "", "pods", ""), true, reason},
                      {"cluster-scoped", alice, Res("get", "", "nodes", "", "n1"), true, reason},
                      {"verb not granted", alice, Res("delete", "", "nodes", "", "n1"), false},
                      {"roleRef kind Role", MakeUser("bob"), Res("list", "", "pods", "ml"), false},
                  });
}

TEST(RbacAuthorizerTest, SubjectsMatchUsersGroupsAndServiceAccounts) {
  RbacPolicy policy;
  policy.cluster_roles = {ClusterRole("pods", json::array({Rule({"list"}, {""}, {"pods"})}))};
  policy.cluster_role_bindings = {
      ClusterRoleBinding("by-group", "pods", json::array({GroupSubject("ops")})),
      ClusterRoleBinding("by-sa", "pods", json::array({SaSubject("robot", "infra")})),
      // Without a namespace a ClusterRoleBinding's ServiceAccount names no one.
      ClusterRoleBinding("sa-no-ns", "pods", json::array({SaSubject("lost")})),
  };
  policy.role_bindings = {
      RoleBinding("ml", "runner", "ClusterRole", "pods",
                  json::array({UserSubject("carol"), SaSubject("runner")})),
      RoleBinding("ml", "other-sa", "ClusterRole", "pods",
                  json::array({SaSubject("builder", "ci")})),
  };
  const UserInfo runner =
      MakeUser(ServiceAccountUsername("ml", "runner"),
               {"system:serviceaccounts", "system:serviceaccounts:ml", kAuthenticatedGroup});
  ExpectDecisions(
      policy,
      {
          {"group member", MakeUser("dave", {"ops", kAuthenticatedGroup}),
           Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by ClusterRoleBinding "by-group" of ClusterRole "pods" to Group "ops")"},
          {"not a member", MakeUser("erin"), Res("list", "", "pods", "ml"), false},
          {"a user named like the group", MakeUser("ops"), Res("list", "", "pods", "ml"), false},
          {"ServiceAccount with namespace", MakeUser("system:serviceaccount:infra:robot"),
           Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by ClusterRoleBinding "by-sa" of ClusterRole "pods" to ServiceAccount "robot/infra")"},
          {"same name, other namespace", MakeUser("system:serviceaccount:ml:robot"),
           Res("list", "", "pods", "x"), false},
          {"ClusterRoleBinding SA without namespace", MakeUser("system:serviceaccount::lost"),
           Res("list", "", "pods", "x"), false},
          {"RoleBinding SA without namespace", runner, Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by RoleBinding "runner/ml" of ClusterRole "pods" to ServiceAccount "runner/ml")"},
          {"RoleBinding SA of another namespace", MakeUser("system:serviceaccount:ci:builder"),
           Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by RoleBinding "other-sa/ml" of ClusterRole "pods" to ServiceAccount "builder/ci")"},
          {"RoleBinding user", MakeUser("carol"), Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by RoleBinding "runner/ml" of ClusterRole "pods" to User "carol")"},
          {"a user named like the ServiceAccount", MakeUser("runner"),
           Res("list", "", "pods", "ml"), false},
      });
}

TEST(RbacAuthorizerTest, MissingRoleGrantsNothing) {
  RbacPolicy policy;
  policy.cluster_role_bindings = {
      ClusterRoleBinding("gone", "no-such-role", json::array({UserSubject("alice")}))};
  policy.role_bindings = {
      RoleBinding("ml", "gone", "Role", "no-such-role", json::array({UserSubject("alice")})),
      RoleBinding("ml", "gone2", "ClusterRole", "nope", json::array({UserSubject("alice")}))};
  ExpectDecisions(policy,
                  {
                      {"resource", MakeUser("alice"), Res("get", "", "pods", "ml", "p"), false},
                      {"non-resource", MakeUser("alice"), Path("get", "/version"), false},
                  });
}

// ---- Rules ----

struct RuleCase {
  std::string name;
  json rule;
  AuthorizationAttributes attributes;
  bool allowed;
};

TEST(RbacAuthorizerTest, ResourceRulesMatchLikeKube) {
  const std::vector<RuleCase> cases = {
      {"verb listed", Rule({"get"}, {""}, {"pods"}), Res("get", "", "pods", "ml", "p"), true},
      {"verb not listed", Rule({"get"}, {""}, {"pods"}), Res("list", "", "pods", "ml"), false},
      {"verbs *", Rule({"*"}, {""}, {"pods"}), Res("deletecollection", "", "pods", "ml"), true},
      {"group mismatch", Rule({"get"}, {"apps"}, {"pods"}), Res("get", "", "pods", "ml"), false},
      {"core rule, other group", Rule({"get"}, {""}, {"deployments"}),
       Res("get", "apps", "deployments", "ml"), false},
      {"apiGroups *", Rule({"get"}, {"*"}, {"rolloutpools"}),
       Res("get", "sluice.dev", "rolloutpools", "ml"), true},
      {"resources * covers subresources", Rule({"get"}, {""}, {"*"}),
       Res("get", "", "pods", "ml", "p", "log"), true},
      {"*/log", Rule({"get"}, {""}, {"*/log"}), Res("get", "", "pods", "ml", "p", "log"), true},
      {"*/log, no subresource", Rule({"get"}, {""}, {"*/log"}), Res("get", "", "pods", "ml", "p"),
       false},
      {"*/log, other subresource", Rule({"get"}, {""}, {"*/log"}),
       Res("get", "", "pods", "ml", "p", "status"), false},
      {"exact subresource", Rule({"get"}, {""}, {"pods/log"}),
       Res("get", "", "pods", "ml", "p", "log"), true},
      {"subresource rule, main resource", Rule({"get"}, {""}, {"pods/log"}),
       Res("get", "", "pods", "ml", "p"), false},
      {"pods does not cover pods/log", Rule({"get"}, {""}, {"pods"}),
       Res("get", "", "pods", "ml", "p", "log"), false},
      {"pods/* is literal", Rule({"get"}, {""}, {"pods/*"}),
       Res("get", "", "pods", "ml", "p", "log"), false},
      {"resource mismatch", Rule({"get"}, {""}, {"services"}), Res("get", "", "pods", "ml", "p"),
       false},
      {"resourceNames, named", Rule({"get"}, {""}, {"pods"}, {"p", "q"}),
       Res("get", "", "pods", "ml", "q"), true},
      {"resourceNames, other name", Rule({"get"}, {""}, {"pods"}, {"p"}),
       Res("get", "", "pods", "ml", "x"), false},
      {"resourceNames, list", Rule({"list"}, {""}, {"pods"}, {"p"}), Res("list", "", "pods", "ml"),
       false},
      {"resourceNames, create", Rule({"create"}, {""}, {"pods"}, {"p"}),
       Res("create", "", "pods", "ml"), false},
      {"resource rule, non-resource request", Rule({"*"}, {"*"}, {"*"}), Path("get", "/version"),
       false},
      {"non-resource rule, resource request", UrlRule({"*"}, {"*"}),
       Res("get", "", "pods", "ml", "p"), false},
      {"missing fields are empty", json{{"verbs", {"*"}}}, Res("get", "", "pods", "ml", "p"),
       false},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    RbacPolicy policy;
    policy.cluster_roles = {ClusterRole("r", json::array({c.rule}))};
    policy.cluster_role_bindings = {
        ClusterRoleBinding("b", "r", json::array({UserSubject("alice")}))};
    const AuthorizationDecision decision = Authorize(MakeUser("alice"), c.attributes, policy);
    EXPECT_EQ(decision.allowed, c.allowed);
  }
}

TEST(RbacAuthorizerTest, NonResourceRulesMatchPaths) {
  const std::vector<RuleCase> cases = {
      {"exact", UrlRule({"get"}, {"/version"}), Path("get", "/version"), true},
      {"exact, longer path", UrlRule({"get"}, {"/version"}), Path("get", "/version/x"), false},
      {"exact, verb mismatch", UrlRule({"get"}, {"/version"}), Path("post", "/version"), false},
      {"verbs *", UrlRule({"*"}, {"/version"}), Path("post", "/version"), true},
      {"prefix", UrlRule({"get"}, {"/apis/*"}), Path("get", "/apis/sluice.dev/v1"), true},
      {"prefix, the slash itself", UrlRule({"get"}, {"/apis/*"}), Path("get", "/apis/"), true},
      {"prefix, shorter path", UrlRule({"get"}, {"/apis/*"}), Path("get", "/apis"), false},
      {"prefix, other path", UrlRule({"get"}, {"/apis/*"}), Path("get", "/api/v1"), false},
      {"*", UrlRule({"get"}, {"*"}), Path("get", "/metrics"), true},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    RbacPolicy policy;
    policy.cluster_roles = {ClusterRole("r", json::array({c.rule}))};
    policy.cluster_role_bindings = {
        ClusterRoleBinding("b", "r", json::array({UserSubject("alice")}))};
    const AuthorizationDecision decision = Authorize(MakeUser("alice"), c.attributes, policy);
    EXPECT_EQ(decision.allowed, c.allowed);
    if (c.allowed) {
      EXPECT_EQ(decision.reason,
                R"(RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "alice")");
    }
  }
}

TEST(RbacAuthorizerTest, RoleBindingsNeverGrantNonResourceUrls) {
  RbacPolicy policy;
  policy.cluster_roles = {
      ClusterRole("everything", json::array({Rule({"*"}, {"*"}, {"*"}), UrlRule({"*"}, {"*"})}))};
  policy.role_bindings = {
      RoleBinding("ml", "b", "ClusterRole", "everything", json::array({UserSubject("alice")}))};
  ExpectDecisions(policy,
                  {
                      {"resource in ml", MakeUser("alice"), Res("get", "", "pods", "ml"), true},
                      {"a path", MakeUser("alice"), Path("get", "/version"), false},
                  });
}

// ---- Forbidden messages ----

TEST(RbacAuthorizerTest, ForbiddenMessagesReadAsKubes) {
  struct MessageCase {
    std::string name;
    AuthorizationAttributes attributes;
    std::string reason;
    std::string message;
  };
  const std::vector<MessageCase> cases = {
      {"core, namespaced collection", Res("list", "", "pods", "ml"), "",
       R"(pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace "ml")"},
      {"named, with subresource", Res("get", "", "pods", "ml", "p", "log"), "",
       R"(pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the namespace "ml")"},
      {"cluster scope", Res("list", "", "nodes", ""), "",
       R"(nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope)"},
      {"non-core group", Res("create", "sluice.dev", "rolloutpools", "ml"), "",
       R"(rolloutpools.sluice.dev is forbidden: User "u" cannot create resource "rolloutpools" in API group "sluice.dev" in the namespace "ml")"},
      {"non-resource", Path("get", "/metrics"), "",
       R"(forbidden: User "u" cannot get path "/metrics")"},
      {"with reason", Res("delete", "", "nodes", "", "n1"), "no RBAC policy matched",
       R"(nodes "n1" is forbidden: User "u" cannot delete resource "nodes" in API group "" at the cluster scope: no RBAC policy matched)"},
  };
  for (const MessageCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ForbiddenMessage(MakeUser("u"), c.attributes, c.reason), c.message);
  }
  EXPECT_EQ(
      ForbiddenMessage(MakeUser("system:serviceaccount:ml:x"), Res("list", "", "pods", "ml")),
      R"(pods is forbidden: User "system:serviceaccount:ml:x" cannot list resource "pods" in API group "" in the namespace "ml")");
}

// ---- Bootstrap policy ----

RbacPolicy BootstrapPolicy() {
  RbacPolicy policy;
  policy.cluster_roles = BootstrapClusterRoles();
  policy.cluster_role_bindings = BootstrapClusterRoleBindings();
  for (const char* role : {"view", "edit", "admin"}) {
    policy.role_bindings.push_back(RoleBinding("ml", std::string(role) + "-binding", "ClusterRole",
                                               role, json::array({UserSubject(role)})));
  }
  policy.cluster_role_bindings.push_back(
      ClusterRoleBinding("ops-admin", "cluster-admin", json::array({GroupSubject("ops")})));
  return policy;
}

TEST(RbacAuthorizerTest, BootstrapDiscoveryAndBasicUser) {
  const UserInfo someone = MakeUser("someone");
  const UserInfo anonymous = MakeUser("system:anonymous", {"system:unauthenticated"});
  ExpectDecisions(
      BootstrapPolicy(),
      {
          {"version", someone, Path("get", "/version"), true,
           R"(RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated")"},
          {"a group's discovery", someone, Path("get", "/apis/sluice.dev"), true},
          {"openapi", someone, Path("get", "/openapi/v3"), true},
          {"not metrics", someone, Path("get", "/metrics"), false},
          {"not a post", someone, Path("post", "/version"), false},
          {"self review", someone,
           Res("create", "authorization.k8s.io", "selfsubjectaccessreviews", ""), true,
           R"(RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated")"},
          {"whoami", someone, Res("create", "authentication.k8s.io", "selfsubjectreviews", ""),
           true},
          {"no pods", someone, Res("list", "", "pods", "ml"), false},
          {"unauthenticated healthz", anonymous, Path("get", "/healthz"), true,
           R"(RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated")"},
          {"unauthenticated version", anonymous, Path("get", "/version"), true},
          {"unauthenticated apis", anonymous, Path("get", "/apis"), false},
          {"unauthenticated self review", anonymous,
           Res("create", "authorization.k8s.io", "selfsubjectaccessreviews", ""), false},
      });
}

TEST(RbacAuthorizerTest, BootstrapViewEditAdmin) {
  const UserInfo view = MakeUser("view");
  const UserInfo edit = MakeUser("edit");
  const UserInfo admin = MakeUser("admin");
  ExpectDecisions(
      BootstrapPolicy(),
      {
          {"view lists pods", view, Res("list", "", "pods", "ml"), true,
           R"(RBAC: allowed by RoleBinding "view-binding/ml" of ClusterRole "view" to User "view")"},
          {"view reads logs", view, Res("get", "", "pods", "ml", "p", "log"), true},
          {"view lists rolloutpools", view, Res("list", "sluice.dev", "rolloutpools", "ml"), true},
          {"view reads deployments", view, Res("get", "apps", "deployments", "ml", "d"), true},
          {"view, no secrets", view, Res("get", "", "secrets", "ml", "s"), false},
          {"view, no deletes", view, Res("delete", "", "pods", "ml", "p"), false},
          {"view, no exec", view, Res("create", "", "pods", "ml", "p", "exec"), false},
          {"view, other namespace", view, Res("list", "", "pods", "other"), false},
          {"edit deletes pods", edit, Res("delete", "", "pods", "ml", "p"), true},
          {"edit reads secrets", edit, Res("get", "", "secrets", "ml", "s"), true},
          {"edit execs", edit, Res("create", "", "pods", "ml", "p", "exec"), true},
          {"edit evicts", edit, Res("create", "", "pods", "ml", "p", "eviction"), true},
          {"edit mints tokens", edit, Res("create", "", "serviceaccounts", "ml", "sa", "token"),
           true},
          {"edit scales rolloutpools", edit,
           Res("update", "sluice.dev", "rolloutpools", "ml", "r", "scale"), true},
          {"edit, no roles", edit, Res("create", "rbac.authorization.k8s.io", "roles", "ml"),
           false},
          {"edit, no rolebindings", edit,
           Res("create", "rbac.authorization.k8s.io", "rolebindings", "ml"), false},
          {"admin binds", admin, Res("create", "rbac.authorization.k8s.io", "rolebindings", "ml"),
           true},
          {"admin writes roles", admin,
           Res("delete", "rbac.authorization.k8s.io", "roles", "ml", "r"), true},
          {"admin reviews", admin,
           Res("create", "authorization.k8s.io", "localsubjectaccessreviews", "ml"), true},
          {"admin deletes pods", admin, Res("delete", "", "pods", "ml", "p"), true},
          {"admin, no namespaces delete", admin, Res("delete", "", "namespaces", "", "ml"), false},
          {"admin, no nodes", admin, Res("list", "", "nodes", ""), false},
      });
}

TEST(RbacAuthorizerTest, BootstrapClusterAdminAllowsAnything) {
  const UserInfo ops = MakeUser("olga", {"ops", kAuthenticatedGroup});
  const std::string reason =
      R"(RBAC: allowed by ClusterRoleBinding "ops-admin" of ClusterRole "cluster-admin" to Group "ops")";
  ExpectDecisions(
      BootstrapPolicy(),
      {
          {"nodes", ops, Res("delete", "", "nodes", "", "n1"), true, reason},
          {"secrets", ops, Res("get", "", "secrets", "x", "s"), true, reason},
          {"crds", ops, Res("create", "apiextensions.k8s.io", "customresourcedefinitions", ""),
           true, reason},
          {"subresource", ops, Res("update", "sluice.dev", "trainerjobs", "ml", "t", "status"),
           true, reason},
          {"metrics", ops, Path("get", "/metrics"), true, reason},
      });
  // kube's own cluster-admin binding is to system:masters.
  for (const json& binding : BootstrapClusterRoleBindings()) {
    if (binding["metadata"]["name"] != "cluster-admin") continue;
    EXPECT_EQ(binding["roleRef"]["name"], "cluster-admin");
    EXPECT_EQ(binding["subjects"],
              json::parse(R"([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                              "name": "system:masters"}])"));
  }
}

TEST(RbacAuthorizerTest, BootstrapObjectsAreLabelledAndConsistent) {
  std::set<std::string> roles;
  for (const json& role : BootstrapClusterRoles()) {
    SCOPED_TRACE(role.dump());
    EXPECT_EQ(role["apiVersion"], "rbac.authorization.k8s.io/v1");
    EXPECT_EQ(role["kind"], "ClusterRole");
    EXPECT_EQ(role["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    EXPECT_EQ(role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
              "true");
    EXPECT_TRUE(role["rules"].is_array());
    EXPECT_TRUE(roles.insert(role["metadata"]["name"].get<std::string>()).second);
  }
  EXPECT_EQ(roles,
            (std::set<std::string>{"cluster-admin", "system:discovery", "system:public-info-viewer",
                                   "system:basic-user", "view", "edit", "admin"}));
  std::set<std::string> bindings;
  for (const json& binding : BootstrapClusterRoleBindings()) {
    SCOPED_TRACE(binding.dump());
    EXPECT_EQ(binding["apiVersion"], "rbac.authorization.k8s.io/v1");
    EXPECT_EQ(binding["kind"], "ClusterRoleBinding");
    EXPECT_EQ(binding["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    EXPECT_EQ(binding["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
              "true");
    EXPECT_EQ(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    EXPECT_EQ(binding["roleRef"]["kind"], "ClusterRole");
    EXPECT_TRUE(roles.count(binding["roleRef"]["name"].get<std::string>()));
    for (const json& subject : binding["subjects"]) {
      EXPECT_EQ(subject["kind"], "Group");
      EXPECT_EQ(subject["apiGroup"], "rbac.authorization.k8s.io");
    }
    bindings.insert(binding["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(bindings, (std::set<std::string>{"cluster-admin", "system:discovery",
                                             "system:basic-user", "system:public-info-viewer"}));
}

}  // namespace rbac_authorizer_test
}  // namespace sluice::apiserver
