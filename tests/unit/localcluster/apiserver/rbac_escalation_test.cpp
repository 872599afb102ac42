// RBAC escalation prevention (rbac_escalation.h) over hand-made policies: kube's coverage of
// requested rules by held ones, its message, the rules a user holds, and the decision for role
// and binding writes with the escalate and bind shortcuts and the system:masters bypass.
#include "localcluster/apiserver/rbac_escalation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/rbac_authorizer.h"
#include "localcluster/apiserver/user_info.h"

namespace sluice::apiserver {
namespace rbac_escalation_test {

using nlohmann::json;
using Strings = std::vector<std::string>;

constexpr char kGroup[] = "rbac.authorization.k8s.io";
constexpr char kRobot[] = "system:serviceaccount:default:robot";
constexpr char kHeld[] = " is attempting to grant RBAC permissions not currently held:\n";

// ---- Builders ----

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
  json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", ns.empty() ? "ClusterRole" : "Role"},
               {"metadata", {{"name", name}}},
               {"rules", std::move(rules)}};
  if (!ns.empty()) role["metadata"]["namespace"] = ns;
  return role;
}

json Binding(const std::string& ns, const std::string& name, const std::string& kind,
             const std::string& role, json subjects) {
  json binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                  {"kind", ns.empty() ? "ClusterRoleBinding" : "RoleBinding"},
                  {"metadata", {{"name", name}}},
                  {"roleRef", {{"apiGroup", kGroup}, {"kind", kind}, {"name", role}}},
                  {"subjects", std::move(subjects)}};
  if (!ns.empty()) binding["metadata"]["namespace"] = ns;
  return binding;
}

json User(const std::string& name) {
  return {{"kind", "User"}, {"apiGroup", kGroup}, {"name", name}};
}
json Group(const std::string& name) {
  return {{"kind", "Group"}, {"apiGroup", kGroup}, {"name", name}};
}
json Sa(const std::string& name) { return {{"kind", "ServiceAccount"}, {"name", name}}; }

UserInfo MakeUser(const std::string& name, Strings groups) {
  UserInfo user;
  user.name = name;
  user.groups = std::move(groups);
  return user;
}

UserInfo Robot() {
  return MakeUser(
      kRobot, {"system:serviceaccounts", "system:serviceaccounts:default", kAuthenticatedGroup});
}

RbacWrite Write(const std::string& resource, const std::string& ns, const std::string& name = "") {
  return {kGroup, resource, ns, name};
}

// The robot may write roles and bindings in default and read pods there.
RbacPolicy RobotPolicy() {
  RbacPolicy policy;
  policy.roles.push_back(
      Role("default", "role-admin",
           json::array({Rule({"create", "update"}, {kGroup}, {"roles", "rolebindings"}),
                        Rule({"get", "list"}, {""}, {"pods"})})));
  policy.roles.push_back(
      Role("default", "secret-reader", json::array({Rule({"get"}, {""}, {"secrets"})})));
  policy.roles.push_back(
      Role("default", "pod-lister", json::array({Rule({"list"}, {""}, {"pods"})})));
  policy.cluster_roles.push_back(
      Role("", "cluster-pod-lister", json::array({Rule({"list"}, {""}, {"pods"})})));
  policy.role_bindings.push_back(
      Binding("default", "robot-role-admin", "Role", "role-admin", json::array({Sa("robot")})));
  return policy;
}

void GrantRobot(RbacPolicy& policy, const std::string& name, const json& rule) {
  policy.roles.push_back(Role("default", name, json::array({rule})));
  policy.role_bindings.push_back(
      Binding("default", name, "Role", name, json::array({Sa("robot")})));
}

std::string RobotMessage(const std::string& subject, const std::string& lines) {
  return subject +
         " is forbidden: user \"system:serviceaccount:default:robot\" (groups=[\"system:"
         "serviceaccounts\" \"system:serviceaccounts:default\" \"system:authenticated\"])" +
         kHeld + lines;
}

// ---- Coverage ----

struct CoverCase {
  std::string name;
  std::vector<json> held;
  json requested;
  Strings missing;  // MissingRuleDescriptions of the uncovered rules.
};

TEST(RbacEscalationTest, CoverageFollowsKubesRuleComparison) {
  const std::vector<CoverCase> cases = {
      {"nothing requested", {}, json::array(), {}},
      {"an exact rule",
       {Rule({"get", "list"}, {""}, {"pods"})},
       json::array({Rule({"get"}, {""}, {"pods"})}),
       {}},
      {"verbs not held, merged into one line",
       {Rule({"get"}, {""}, {"pods"})},
       json::array({Rule({"get", "list", "watch"}, {""}, {"pods"})}),
       {R"({APIGroups:[""], Resources:["pods"], Verbs:["list" "watch"]})"}},
      {"a held * verb covers every verb, * included",
       {Rule({"*"}, {""}, {"pods"})},
       json::array({Rule({"*", "escalate"}, {""}, {"pods"})}),
       {}},
      {"a requested * verb needs a held *",
       {Rule({"get", "list", "watch", "create", "update", "patch", "delete"}, {""}, {"pods"})},
       json::array({Rule({"*"}, {""}, {"pods"})}),
       {R"({APIGroups:[""], Resources:["pods"], Verbs:["*"]})"}},
      {"held * group and resource",
       {Rule({"get"}, {"*"}, {"*"})},
       json::array({Rule({"get"}, {"apps", ""}, {"deployments", "secrets", "pods/log"})}),
       {}},
      {"a requested * resource needs a held *",
       {Rule({"get"}, {""}, {"pods", "secrets"})},
       json::array({Rule({"get"}, {""}, {"*"})}),
       {R"({APIGroups:[""], Resources:["*"], Verbs:["get"]})"}},
      {"*/sub covers x/sub; a resource does not cover its subresources",
       {Rule({"get"}, {""}, {"pods", "*/status"})},
       json::array({Rule({"get"}, {""}, {"pods/status", "nodes/status", "pods/log", "pods"})}),
       {R"({APIGroups:[""], Resources:["pods/log"], Verbs:["get"]})"}},
      {"*/status does not cover the resource itself",
       {Rule({"get"}, {""}, {"*/status"})},
       json::array({Rule({"get"}, {""}, {"pods"})}),
       {R"({APIGroups:[""], Resources:["pods"], Verbs:["get"]})"}},
      {"the group must match",
       {Rule({"get"}, {""}, {"deployments"})},
       json::array({Rule({"get"}, {"apps"}, {"deployments"})}),
       {R"({APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]})"}},
      {"held names cover those names only, and never a nameless rule",
       {Rule({"get", "list"}, {""}, {"secrets"}, {"a"})},
       json::array(
           {Rule({"get"}, {""}, {"secrets"}, {"a", "b"}), Rule({"list"}, {""}, {"secrets"})}),
       {R"({APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]})",
        R"({APIGroups:[""], Resources:["secrets"], Verbs:["list"]})"}},
      {"a nameless held rule covers named requests",
       {Rule({"get"}, {""}, {"secrets"})},
       json::array({Rule({"get"}, {""}, {"secrets"}, {"a"})}),
       {}},
      {"URLs: exact or a *-suffixed prefix; each URL and verb its own line",
       {UrlRule({"get"}, {"/healthz", "/api/*"})},
       json::array({UrlRule({"get", "post"}, {"/healthz", "/api/v1", "/apis"})}),
       {R"({NonResourceURLs:["/api/v1"], Verbs:["post"]})",
        R"({NonResourceURLs:["/apis"], Verbs:["get"]})",
        R"({NonResourceURLs:["/apis"], Verbs:["post"]})",
        R"({NonResourceURLs:["/healthz"], Verbs:["post"]})"}},
      {"a held URL * covers every URL",
       {UrlRule({"*"}, {"*"})},
       json::array({UrlRule({"get"}, {"/metrics", "/"})}),
       {}},
      {"resource rules do not cover URLs",
       {Rule({"*"}, {"*"}, {"*"})},
       json::array({UrlRule({"get"}, {"/metrics"})}),
       {R"({NonResourceURLs:["/metrics"], Verbs:["get"]})"}},
      {"URL rules do not cover resources",
       {UrlRule({"*"}, {"*"})},
       json::array({Rule({"get"}, {""}, {"pods"})}),
       {R"({APIGroups:[""], Resources:["pods"], Verbs:["get"]})"}},
      {"sorted; verbs merged per group and resource, repeats kept as kube does",
       {},
       json::array({Rule({"get", "list"}, {"", "apps"}, {"secrets", "deployments"}),
                    Rule({"get"}, {""}, {"secrets"})}),
       {R"({APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]})",
        R"({APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "get"]})",
        R"({APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]})",
        R"({APIGroups:["apps"], Resources:["secrets"], Verbs:["get" "list"]})"}},
      {"a rule without verbs or without apiGroups asks for nothing",
       {},
       json::array({Rule({}, {""}, {"pods"}), {{"verbs", {"get"}}, {"resources", {"pods"}}}}),
       {}},
  };
  for (const CoverCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MissingRuleDescriptions(UncoveredRules(c.held, c.requested)), c.missing);
  }
}

TEST(RbacEscalationTest, UncoveredRulesAreAtomicInBreakdownOrder) {
  const json requested = json::array(
      {Rule({"get", "list"}, {""}, {"secrets"}, {"a", "b"}), UrlRule({"get"}, {"/metrics"})});
  const std::vector<json> uncovered =
      UncoveredRules({Rule({"list"}, {""}, {"secrets"})}, requested);
  const std::vector<json> expected = {
      Rule({"get"}, {""}, {"secrets"}, {"a"}),
      Rule({"get"}, {""}, {"secrets"}, {"b"}),
      UrlRule({"get"}, {"/metrics"}),
  };
  EXPECT_EQ(uncovered, expected);
  EXPECT_EQ(
      MissingRuleDescriptions(UncoveredRules({}, requested)),
      (Strings{
          R"({APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get" "list"]})",
          R"({APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get" "list"]})",
          R"({NonResourceURLs:["/metrics"], Verbs:["get"]})"}));
}

TEST(RbacEscalationTest, CompactRuleStringPrintsTheNonEmptyListsAsGoDoes) {
  json rule = Rule({"get"}, {"", "apps"}, {"pods"}, {"a\"b", "tab\there"});
  rule["nonResourceURLs"] = Strings{"/x"};
  EXPECT_EQ(CompactRuleString(rule),
            R"({APIGroups:["" "apps"], Resources:["pods"], NonResourceURLs:["/x"], )"
            R"(ResourceNames:["a\"b" "tab\there"], Verbs:["get"]})");
  EXPECT_EQ(CompactRuleString(json::object()), "{}");
}

// ---- Held rules ----

TEST(RbacEscalationTest,
     RulesHeldByGathersClusterBindingsEverywhereAndRoleBindingsInTheirNamespace) {
  const json pods = Rule({"get"}, {""}, {"pods"});
  const json secrets = Rule({"get"}, {""}, {"secrets"});
  const json deployments = Rule({"update"}, {"apps"}, {"deployments"});
  const json metrics = UrlRule({"get"}, {"/metrics"});
  RbacPolicy policy;
  policy.cluster_roles.push_back(Role("", "reader", json::array({pods, metrics})));
  policy.cluster_roles.push_back(Role("", "deployer", json::array({deployments})));
  policy.roles.push_back(Role("ml", "secrets", json::array({secrets})));
  policy.cluster_role_bindings.push_back(
      Binding("", "readers", "ClusterRole", "reader", json::array({Group("team")})));
  policy.cluster_role_bindings.push_back(
      Binding("", "ghost", "ClusterRole", "missing", json::array({User("alice")})));
  policy.role_bindings.push_back(
      Binding("ml", "s", "Role", "secrets", json::array({User("alice")})));
  policy.role_bindings.push_back(
      Binding("other", "s", "Role", "secrets", json::array({User("alice")})));
  policy.role_bindings.push_back(
      Binding("ml", "d", "ClusterRole", "deployer", json::array({Sa("robot")})));

  const UserInfo alice = MakeUser("alice", {"team", kAuthenticatedGroup});
  std::vector<std::string> errors;
  EXPECT_EQ(RulesHeldBy(alice, "ml", policy, &errors), (std::vector<json>{pods, metrics, secrets}));
  EXPECT_EQ(errors, Strings{R"(clusterroles.rbac.authorization.k8s.io "missing" not found)"});
  errors.clear();
  EXPECT_EQ(RulesHeldBy(alice, "", policy, &errors), (std::vector<json>{pods, metrics}));
  EXPECT_EQ(errors.size(), 1u);
  errors.clear();
  EXPECT_EQ(RulesHeldBy(alice, "other", policy, &errors), (std::vector<json>{pods, metrics}));
  EXPECT_EQ(errors, (Strings{R"(clusterroles.rbac.authorization.k8s.io "missing" not found)",
                             R"(roles.rbac.authorization.k8s.io "secrets" not found)"}));

  // A ServiceAccount subject without a namespace is in the RoleBinding's.
  const UserInfo robot = MakeUser("system:serviceaccount:ml:robot", {kAuthenticatedGroup});
  EXPECT_EQ(RulesHeldBy(robot, "ml", policy), std::vector<json>{deployments});
  EXPECT_TRUE(RulesHeldBy(robot, "default", policy).empty());
  EXPECT_TRUE(RulesHeldBy(MakeUser("bob", {}), "ml", policy).empty());

  // A ClusterRoleBinding naming a Role resolves to kube's error.
  policy.cluster_role_bindings.push_back(
      Binding("", "bad", "Role", "secrets", json::array({User("bob")})));
  errors.clear();
  EXPECT_TRUE(RulesHeldBy(MakeUser("bob", {}), "ml", policy, &errors).empty());
  EXPECT_EQ(errors, Strings{"Namespace parameter required."});
}

// ---- Messages ----

TEST(RbacEscalationTest, EscalationMessageIsKubes) {
  const std::vector<json> uncovered =
      UncoveredRules({}, json::array({Rule({"get", "list"}, {""}, {"secrets"})}));
  const UserInfo alice = MakeUser("alice", {"dev", kAuthenticatedGroup});
  const std::string held_line = R"({APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]})";
  EXPECT_EQ(EscalationMessage("roles.rbac.authorization.k8s.io", "x", alice, uncovered),
            std::string(R"(roles.rbac.authorization.k8s.io "x" is forbidden: user "alice" )") +
                R"((groups=["dev" "system:authenticated"]))" + kHeld + held_line);
  EXPECT_EQ(
      EscalationMessage("roles.rbac.authorization.k8s.io", "", MakeUser("bob", {}), uncovered),
      std::string(R"(roles.rbac.authorization.k8s.io is forbidden: user "bob" (groups=[]))") +
          kHeld + held_line);
  const std::string gone = R"(roles.rbac.authorization.k8s.io "gone" not found)";
  const std::string start =
      std::string(R"(clusterroles.rbac.authorization.k8s.io "x" is forbidden: user "alice" )") +
      R"((groups=["dev" "system:authenticated"]))" + kHeld + held_line;
  EXPECT_EQ(
      EscalationMessage("clusterroles.rbac.authorization.k8s.io", "x", alice, uncovered, {gone}),
      start + "; resolution errors: [" + gone + "]");
  EXPECT_EQ(EscalationMessage("clusterroles.rbac.authorization.k8s.io", "x", alice, uncovered,
                              {gone, "other", gone}),
            start + "; resolution errors: [[" + gone + ", other]]");
}

// ---- Decisions ----

TEST(RbacEscalationTest, RolesMayGrantOnlyWhatTheWriterHoldsThere) {
  const RbacPolicy policy = RobotPolicy();
  const UserInfo robot = Robot();
  const json secrets =
      Role("default", "secret-reader2", json::array({Rule({"get"}, {""}, {"secrets"})}));
  Status s = ConfirmNoEscalation(robot, Write("roles", "default"), secrets, policy);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), RobotMessage(R"(roles.rbac.authorization.k8s.io "secret-reader2")",
                                      R"({APIGroups:[""], Resources:["secrets"], Verbs:["get"]})"));

  const json pods = Role("default", "pod-getter", json::array({Rule({"get"}, {""}, {"pods"})}));
  EXPECT_TRUE(ConfirmNoEscalation(robot, Write("roles", "default"), pods, policy).ok());
  // Held in default only: not in another namespace, nor cluster-wide.
  s = ConfirmNoEscalation(robot, Write("roles", "ml"), pods, policy);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  s = ConfirmNoEscalation(robot, Write("clusterroles", ""), Role("", "pod-getter", pods["rules"]),
                          policy);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), RobotMessage(R"(clusterroles.rbac.authorization.k8s.io "pod-getter")",
                                      R"({APIGroups:[""], Resources:["pods"], Verbs:["get"]})"));

  // system:masters and other resources are not checked.
  EXPECT_TRUE(ConfirmNoEscalation(AdminUser(), Write("clusterroles", ""), secrets, policy).ok());
  EXPECT_TRUE(ConfirmNoEscalation(robot, {"", "pods", "default", ""}, secrets, policy).ok());
  EXPECT_TRUE(
      ConfirmNoEscalation(robot, {"example.com", "roles", "default", ""}, secrets, policy).ok());

  // The writer's own dangling bindings are reported with the refusal.
  RbacPolicy dangling = policy;
  dangling.role_bindings.push_back(
      Binding("default", "dangling", "Role", "gone", json::array({Sa("robot")})));
  s = ConfirmNoEscalation(robot, Write("roles", "default"), secrets, dangling);
  EXPECT_EQ(s.message(),
            RobotMessage(R"(roles.rbac.authorization.k8s.io "secret-reader2")",
                         R"({APIGroups:[""], Resources:["secrets"], Verbs:["get"]})") +
                R"(; resolution errors: [roles.rbac.authorization.k8s.io "gone" not found])");
}

TEST(RbacEscalationTest, EscalateVerbLetsRolesGrantAnything) {
  const UserInfo robot = Robot();
  const json secrets =
      Role("default", "secret-reader", json::array({Rule({"get"}, {""}, {"secrets"})}));
  RbacPolicy named = RobotPolicy();
  GrantRobot(named, "escalate-one", Rule({"escalate"}, {kGroup}, {"roles"}, {"secret-reader"}));
  // Named: updates of that role only; a create has no name in its request, as in kube.
  EXPECT_TRUE(
      ConfirmNoEscalation(robot, Write("roles", "default", "secret-reader"), secrets, named).ok());
  EXPECT_FALSE(ConfirmNoEscalation(robot, Write("roles", "default"), secrets, named).ok());
  EXPECT_FALSE(ConfirmNoEscalation(robot, Write("roles", "default", "other"), secrets, named).ok());

  RbacPolicy any = RobotPolicy();
  GrantRobot(any, "escalate-all", Rule({"escalate"}, {kGroup}, {"roles"}));
  EXPECT_TRUE(ConfirmNoEscalation(robot, Write("roles", "default"), secrets, any).ok());
  // Escalate on roles is not on clusterroles, and a RoleBinding's reach is its namespace.
  EXPECT_FALSE(ConfirmNoEscalation(robot, Write("clusterroles", ""),
                                   Role("", "secret-reader", secrets["rules"]), any)
                   .ok());
  EXPECT_FALSE(ConfirmNoEscalation(robot, Write("roles", "ml"), secrets, any).ok());
}

TEST(RbacEscalationTest, BindingsNeedTheRolesRulesOrTheBindVerb) {
  const UserInfo robot = Robot();
  RbacPolicy policy = RobotPolicy();
  const json to_secrets =
      Binding("default", "b", "Role", "secret-reader", json::array({User("x")}));
  Status s = ConfirmNoEscalation(robot, Write("rolebindings", "default"), to_secrets, policy);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), RobotMessage(R"(rolebindings.rbac.authorization.k8s.io "b")",
                                      R"({APIGroups:[""], Resources:["secrets"], Verbs:["get"]})"));
  // Held rules: a Role, or a ClusterRole in a RoleBinding.
  EXPECT_TRUE(ConfirmNoEscalation(
                  robot, Write("rolebindings", "default"),
                  Binding("default", "b", "Role", "pod-lister", json::array({User("x")})), policy)
                  .ok());
  EXPECT_TRUE(ConfirmNoEscalation(robot, Write("rolebindings", "default"),
                                  Binding("default", "b", "ClusterRole", "cluster-pod-lister",
                                          json::array({User("x")})),
                                  policy)
                  .ok());
  // A ClusterRoleBinding needs the rules cluster-wide.
  s = ConfirmNoEscalation(
      robot, Write("clusterrolebindings", ""),
      Binding("", "b", "ClusterRole", "cluster-pod-lister", json::array({User("x")})), policy);
  EXPECT_EQ(s.message(), RobotMessage(R"(clusterrolebindings.rbac.authorization.k8s.io "b")",
                                      R"({APIGroups:[""], Resources:["pods"], Verbs:["list"]})"));

  // Missing roles and odd references are kube's errors.
  s = ConfirmNoEscalation(robot, Write("rolebindings", "default"),
                          Binding("default", "b", "Role", "ghost", json::array()), policy);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), R"(roles.rbac.authorization.k8s.io "ghost" not found)");
  s = ConfirmNoEscalation(robot, Write("rolebindings", "default"),
                          Binding("default", "b", "ClusterRole", "ghost", json::array()), policy);
  EXPECT_EQ(s.message(), R"(clusterroles.rbac.authorization.k8s.io "ghost" not found)");
  s = ConfirmNoEscalation(robot, Write("rolebindings", "default"),
                          Binding("default", "b", "Widget", "w", json::array()), policy);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), R"(unsupported role reference kind: "Widget")");
  s = ConfirmNoEscalation(robot, Write("clusterrolebindings", ""),
                          Binding("", "b", "Role", "secret-reader", json::array()), policy);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);

  // bind on the role (by name) is enough, even for a role that does not exist.
  GrantRobot(policy, "binder", Rule({"bind"}, {kGroup}, {"roles"}, {"secret-reader", "ghost"}));
  EXPECT_TRUE(
      ConfirmNoEscalation(robot, Write("rolebindings", "default"), to_secrets, policy).ok());
  EXPECT_TRUE(ConfirmNoEscalation(robot, Write("rolebindings", "default"),
                                  Binding("default", "b", "Role", "ghost", json::array()), policy)
                  .ok());
  // ... for that kind and name only.
  EXPECT_FALSE(ConfirmNoEscalation(
                   robot, Write("rolebindings", "default"),
                   Binding("default", "b", "ClusterRole", "secret-reader", json::array()), policy)
                   .ok());
  // system:masters bind anything.
  EXPECT_TRUE(ConfirmNoEscalation(AdminUser(), Write("clusterrolebindings", ""),
                                  Binding("", "b", "ClusterRole", "ghost", json::array()), policy)
                  .ok());
}

TEST(RbacEscalationTest, UpdatesTouchingOnlyGarbageCollectorFieldsPass) {
  const UserInfo robot = Robot();
  const RbacPolicy policy = RobotPolicy();
  const json old_role =
      Role("default", "secret-reader", json::array({Rule({"get"}, {""}, {"secrets"})}));
  json gc = old_role;
  gc["metadata"]["finalizers"] = Strings{"example.com/keep"};
  gc["metadata"]["ownerReferences"] = json::array({{{"kind", "ConfigMap"}, {"name", "c"}}});
  const RbacWrite update = Write("roles", "default", "secret-reader");
  EXPECT_TRUE(ConfirmNoEscalation(robot, update, gc, policy, &old_role).ok());
  EXPECT_TRUE(ConfirmNoEscalation(robot, update, old_role, policy, &gc).ok());
  json labelled = gc;
  labelled["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_FALSE(ConfirmNoEscalation(robot, update, labelled, policy, &old_role).ok());
}

TEST(RbacEscalationTest, AggregationRulesNeedFullAuthority) {
  RbacPolicy policy;
  policy.cluster_roles.push_back(
      Role("", "almighty", json::array({Rule({"*"}, {"*"}, {"*"}), UrlRule({"*"}, {"*"})})));
  policy.cluster_role_bindings.push_back(
      Binding("", "root", "ClusterRole", "almighty", json::array({User("root")})));
  json aggregated = Role("", "agg", json::array());
  aggregated["aggregationRule"] = {
      {"clusterRoleSelectors", json::array({{{"matchLabels", {{"x", "y"}}}}})}};
  const UserInfo bob = MakeUser("bob", {kAuthenticatedGroup});
  Status s = ConfirmNoEscalation(bob, Write("clusterroles", ""), aggregated, policy);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have "
            "cluster-admin privileges to use the aggregationRule");
  EXPECT_TRUE(
      ConfirmNoEscalation(MakeUser("root", {}), Write("clusterroles", ""), aggregated, policy)
          .ok());
  // Removing one needs it too; without one either side, nothing is asked.
  const json plain = Role("", "agg", json::array());
  EXPECT_FALSE(
      ConfirmNoEscalation(bob, Write("clusterroles", "", "agg"), plain, policy, &aggregated).ok());
  json relabelled = plain;
  relabelled["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_TRUE(
      ConfirmNoEscalation(bob, Write("clusterroles", "", "agg"), relabelled, policy, &plain).ok());
}

TEST(RbacEscalationTest, AdmitRbacWriteReadsThePolicyOnlyWhenItDecides) {
  int reads = 0;
  auto read = [&]() -> Result<RbacPolicy> {
    ++reads;
    return RobotPolicy();
  };
  const json secrets = Role("default", "s", json::array({Rule({"get"}, {""}, {"secrets"})}));
  EXPECT_TRUE(AdmitRbacWrite(AdminUser(), Write("roles", "default"), secrets, nullptr, read).ok());
  EXPECT_TRUE(
      AdmitRbacWrite(Robot(), {"", "configmaps", "default", ""}, secrets, nullptr, read).ok());
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(AdmitRbacWrite(Robot(), Write("roles", "default"), secrets, nullptr, read).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(reads, 1);
  const Status down =
      AdmitRbacWrite(Robot(), Write("roles", "default"), secrets, nullptr,
                     []() -> Result<RbacPolicy> { return Status::Unavailable("storage down"); });
  EXPECT_EQ(down.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(IsEscalationChecked(kGroup, "clusterrolebindings"));
  EXPECT_FALSE(IsEscalationChecked(kGroup, "roles/status"));
  EXPECT_FALSE(IsEscalationChecked("", "roles"));
}

}  // namespace rbac_escalation_test
}  // namespace sluice::apiserver
