// RBAC through the local API server's HTTP API (api_server.h, request_authorization.h): kube's
// 403 for what no binding grants, decided before any lookup; Roles and bindings granting access
// from the next request on; escalation prevention (rbac_escalation.h); impersonation; the access
// reviews; kube's default cluster roles. On an in-process server (in_process_api_server.h).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/unit/localcluster/apiserver/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kRbac[] = "/apis/rbac.authorization.k8s.io/v1";
constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kRobot[] = "system:serviceaccount:default:robot";

class RbacApiTest : public InProcessApiServerTest {
 protected:
  void SetUp() override {
    InProcessApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(
        Post("/api/v1/namespaces/default/serviceaccounts", {{"metadata", {{"name", "robot"}}}})
            .status,
        201);
    const http::Response token =
        Post("/api/v1/namespaces/default/serviceaccounts/robot/token", json::object());
    ASSERT_EQ(token.status, 201) << token.body;
    robot_ = Client(Body(token).value("/status/token"_json_pointer, ""));
    ASSERT_NE(robot_, nullptr);
  }
  void TearDown() override {
    robot_.reset();
    InProcessApiServerTest::TearDown();
  }

  // Creates an RBAC object (`plural` under kRbac, namespaced in default when `namespaced`).
  void Grant(const std::string& plural, const json& object, bool namespaced) {
    const std::string path =
        std::string(kRbac) + (namespaced ? "/namespaces/default/" : "/") + plural;
    const http::Response r = Post(path, object);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  // A Role (or ClusterRole) with one rule, and a binding of it to the robot.
  void GrantRobot(const std::string& name, const json& rule, bool cluster) {
    json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", cluster ? "ClusterRole" : "Role"},
                 {"metadata", {{"name", name}}},
                 {"rules", {rule}}};
    Grant(cluster ? "clusterroles" : "roles", role, !cluster);
    json binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                    {"kind", cluster ? "ClusterRoleBinding" : "RoleBinding"},
                    {"metadata", {{"name", name}}},
                    {"roleRef",
                     {{"apiGroup", "rbac.authorization.k8s.io"},
                      {"kind", cluster ? "ClusterRole" : "Role"},
                      {"name", name}}},
                    {"subjects", {{{"kind", "ServiceAccount"}, {"name", "robot"}}}}};
    if (cluster) binding["subjects"][0]["namespace"] = "default";
    Grant(cluster ? "clusterrolebindings" : "rolebindings", binding, !cluster);
  }

  std::unique_ptr<http::Client> robot_;
};

TEST_F(RbacApiTest, WhatNoBindingGrantsIsKubesForbiddenBeforeAnyLookup) {
  const http::Response listed = Send(*robot_, "GET", kPods);
  EXPECT_EQ(listed.status, 403);
  EXPECT_EQ(Body(listed), json::parse(R"({"kind": "Status", "apiVersion": "v1", "metadata": {},
      "status": "Failure", "reason": "Forbidden", "code": 403, "details": {"kind": "pods"},
      "message": "pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""})"))
      << listed.body;
  // An unknown resource or a missing object is refused the same way, not 404.
  const http::Response widget = Send(*robot_, "GET", "/apis/example.com/v1/widgets/w");
  EXPECT_EQ(widget.status, 403) << widget.body;
  EXPECT_EQ(Body(widget).value("message", ""),
            "widgets.example.com \"w\" is forbidden: User \"system:serviceaccount:default:robot\" "
            "cannot get resource \"widgets\" in API group \"example.com\" at the cluster scope");
  // Discovery and /version are every authenticated user's (system:discovery).
  EXPECT_EQ(Send(*robot_, "GET", "/api").status, 200);
  EXPECT_EQ(Send(*robot_, "GET", "/apis").status, 200);
  EXPECT_EQ(Send(*robot_, "GET", "/version").status, 200);

  // A Role bound in default grants its verbs there, from the next request on.
  GrantRobot("pod-reader", {{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}},
             false);
  EXPECT_EQ(Send(*robot_, "GET", kPods).status, 200);
  EXPECT_EQ(Send(*robot_, "GET", "/api/v1/namespaces/kube-system/pods").status, 403);
  EXPECT_EQ(Send(*robot_, "GET", "/api/v1/pods").status, 403);  // All namespaces: cluster scope.
  EXPECT_EQ(Send(*robot_, "GET", std::string(kPods) + "/web").status, 403);  // get, not list.
  ASSERT_EQ(Delete(std::string(kRbac) + "/namespaces/default/rolebindings/pod-reader").status, 200);
  EXPECT_EQ(Send(*robot_, "GET", kPods).status, 403);

  // resourceNames admit a watch of that one object by field selector.
  GrantRobot("watch-web",
             {{"apiGroups", {""}},
              {"resources", {"pods"}},
              {"verbs", {"list"}},
              {"resourceNames", {"web"}}},
             false);
  EXPECT_EQ(Send(*robot_, "GET", std::string(kPods) + "?fieldSelector=metadata.name%3Dweb").status,
            200);
  EXPECT_EQ(Send(*robot_, "GET", std::string(kPods) + "?fieldSelector=metadata.name%3Ddb").status,
            403);
}

TEST_F(RbacApiTest, ImpersonationNeedsTheImpersonateVerbAndActsAsTheUser) {
  // The admin may impersonate; the request then has the robot's rights.
  const http::Response as_robot =
      Send(*admin_, "GET", kPods, nullptr, {{"Impersonate-User", kRobot}});
  EXPECT_EQ(as_robot.status, 403) << as_robot.body;
  EXPECT_NE(Body(as_robot).value("message", "").find(kRobot), std::string::npos) << as_robot.body;
  // Groups without a user are a bad request.
  EXPECT_EQ(Send(*admin_, "GET", kPods, nullptr, {{"Impersonate-Group", "system:masters"}}).status,
            400);
  // The robot may not impersonate until granted, and then only whom it was granted.
  const http::Response refused =
      Send(*robot_, "GET", kPods, nullptr, {{"Impersonate-User", "alice"}});
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(Body(refused).value("message", ""),
            "users \"alice\" is forbidden: User \"system:serviceaccount:default:robot\" cannot "
            "impersonate resource \"users\" in API group \"\" at the cluster scope");
  GrantRobot("impersonate-alice",
             {{"apiGroups", {""}},
              {"resources", {"users"}},
              {"verbs", {"impersonate"}},
              {"resourceNames", {"alice"}}},
             true);
  const http::Response as_alice =
      Send(*robot_, "GET", kPods, nullptr, {{"Impersonate-User", "alice"}});
  EXPECT_EQ(as_alice.status, 403);
  EXPECT_NE(Body(as_alice).value("message", "").find("User \"alice\" cannot list"),
            std::string::npos)
      << as_alice.body;
  EXPECT_EQ(Send(*robot_, "GET", kPods, nullptr, {{"Impersonate-User", "bob"}}).status, 403);
  // Impersonating a group needs its own grant.
  EXPECT_EQ(Send(*robot_, "GET", kPods, nullptr,
                 {{"Impersonate-User", "alice"}, {"Impersonate-Group", "system:masters"}})
                .status,
            403);
}

TEST_F(RbacApiTest, AccessReviewsAnswerForTheCallerOrTheNamedSubject) {
  const std::string reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  const json can_list = {{"apiVersion", "authorization.k8s.io/v1"},
                         {"kind", "SelfSubjectAccessReview"},
                         {"spec",
                          {{"resourceAttributes",
                            {{"namespace", "default"}, {"verb", "list"}, {"resource", "pods"}}}}}};
  http::Response r = Send(*robot_, "POST", reviews, can_list);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).value("/status/allowed"_json_pointer, true), false) << r.body;
  EXPECT_EQ(Body(r).value("kind", ""), "SelfSubjectAccessReview");
  GrantRobot("pod-lister", {{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}},
             false);
  r = Send(*robot_, "POST", reviews, can_list);
  EXPECT_EQ(Body(r).value("/status/allowed"_json_pointer, false), true) << r.body;
  EXPECT_NE(
      Body(r).value("/status/reason"_json_pointer, "").find("RoleBinding \"pod-lister/default\""),
      std::string::npos)
      << r.body;
  // Non-resource attributes; both or neither kind of attributes is invalid.
  r = Send(*robot_, "POST", reviews,
           {{"spec", {{"nonResourceAttributes", {{"path", "/version"}, {"verb", "get"}}}}}});
  EXPECT_EQ(Body(r).value("/status/allowed"_json_pointer, false), true) << r.body;
  r = Send(*robot_, "POST", reviews, {{"spec", json::object()}});
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_NE(r.body.find("spec.resourceAttributes"), std::string::npos) << r.body;
  // Reviews are only created.
  EXPECT_EQ(Get(reviews).status, 405);
  EXPECT_EQ(Send(*robot_, "GET", reviews).status, 403);  // Authorization comes first.

  // SubjectAccessReview asks for someone else (the admin may create them; the robot may not).
  const json for_robot = {
      {"spec",
       {{"user", kRobot},
        {"groups", {"system:serviceaccounts", "system:serviceaccounts:default"}},
        {"resourceAttributes",
         {{"namespace", "default"}, {"verb", "list"}, {"resource", "pods"}}}}}};
  r = Post("/apis/authorization.k8s.io/v1/subjectaccessreviews", for_robot);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).value("/status/allowed"_json_pointer, false), true) << r.body;
  EXPECT_EQ(
      Send(*robot_, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", for_robot).status,
      403);
  // LocalSubjectAccessReview: its namespace is the path's.
  r = Post("/apis/authorization.k8s.io/v1/namespaces/kube-system/localsubjectaccessreviews",
           for_robot);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_NE(r.body.find("spec.resourceAttributes.namespace"), std::string::npos) << r.body;

  // SelfSubjectReview: who the caller is.
  r = Send(*robot_, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", json::object());
  ASSERT_EQ(r.status, 201) << r.body;
  const json info = Body(r).value("/status/userInfo"_json_pointer, json::object());
  EXPECT_EQ(info.value("username", ""), kRobot);
  EXPECT_EQ(
      info.value("groups", json::array()),
      json({"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}));
}

TEST_F(RbacApiTest, GrantingNeedsTheGrantedRightsOrTheEscalateAndBindVerbs) {
  const std::string roles = std::string(kRbac) + "/namespaces/default/roles";
  const std::string bindings = std::string(kRbac) + "/namespaces/default/rolebindings";
  auto role = [](const std::string& name, const std::string& resource) {
    return json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "Role"},
                {"metadata", {{"name", name}}},
                {"rules", {{{"apiGroups", {""}}, {"resources", {resource}}, {"verbs", {"get"}}}}}};
  };
  auto binding = [](const std::string& name, const std::string& role_name) {
    return json{
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "RoleBinding"},
        {"metadata", {{"name", name}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", role_name}}},
        {"subjects", {{{"kind", "ServiceAccount"}, {"name", "robot"}}}}};
  };
  // The robot may write Roles and RoleBindings in default, and read pods there.
  GrantRobot("rbac-writer",
             {{"apiGroups", {"rbac.authorization.k8s.io"}},
              {"resources", {"roles", "rolebindings"}},
              {"verbs", {"create", "update"}}},
             false);
  GrantRobot("pod-reader", {{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get"}}},
             false);
  const std::string robot_is =
      "user \"system:serviceaccount:default:robot\" (groups=[\"system:serviceaccounts\" "
      "\"system:serviceaccounts:default\" \"system:authenticated\"]) is attempting to grant RBAC "
      "permissions not currently held:\n";

  // It may grant what it holds, not more: kube's 403 naming what is missing.
  http::Response r = Send(*robot_, "POST", roles, role("secret-reader", "secrets"));
  ASSERT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(Body(r).value("reason", ""), "Forbidden");
  EXPECT_EQ(
      Body(r).value("details", json()),
      json({{"group", "rbac.authorization.k8s.io"}, {"kind", "roles"}, {"name", "secret-reader"}}));
  EXPECT_EQ(Body(r).value("message", ""),
            "roles.rbac.authorization.k8s.io \"secret-reader\" is forbidden: " + robot_is +
                "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}");
  EXPECT_EQ(Send(*robot_, "POST", roles, role("pod-getter", "pods")).status, 201);
  EXPECT_EQ(Send(*robot_, "POST", bindings, binding("robot-pod-getter", "pod-getter")).status, 201);
  // Updates are checked too.
  json widened = Body(Get(roles + "/pod-getter"));
  widened["rules"].push_back({{"apiGroups", {""}}, {"resources", {"secrets"}}, {"verbs", {"get"}}});
  r = Send(*robot_, "PUT", roles + "/pod-getter", widened);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(Body(r)
                .value("message", "")
                .find("roles.rbac.authorization.k8s.io \"pod-getter\" is "
                      "forbidden"),
            std::string::npos)
      << r.body;

  // escalate on roles lifts the check for Roles.
  GrantRobot("escalator",
             {{"apiGroups", {"rbac.authorization.k8s.io"}},
              {"resources", {"roles"}},
              {"verbs", {"escalate"}}},
             false);
  r = Send(*robot_, "POST", roles, role("secret-reader", "secrets"));
  EXPECT_EQ(r.status, 201) << r.body;

  // Binding a Role whose rules the robot lacks needs bind on it.
  r = Send(*robot_, "POST", bindings, binding("robot-secret-reader", "secret-reader"));
  ASSERT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(Body(r).value("message", ""),
            "rolebindings.rbac.authorization.k8s.io \"robot-secret-reader\" is forbidden: " +
                robot_is + "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}");
  GrantRobot("binder",
             {{"apiGroups", {"rbac.authorization.k8s.io"}},
              {"resources", {"roles"}},
              {"verbs", {"bind"}},
              {"resourceNames", {"secret-reader"}}},
             false);
  r = Send(*robot_, "POST", bindings, binding("robot-secret-reader", "secret-reader"));
  EXPECT_EQ(r.status, 201) << r.body;
  // The binding works: a missing secret is now a 404, not a 403.
  EXPECT_EQ(Send(*robot_, "GET", "/api/v1/namespaces/default/secrets/none").status, 404);
  // Without bind on it, a binding to a missing Role is kube's 404 for the Role.
  r = Send(*robot_, "POST", bindings, binding("robot-ghost", "ghost"));
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(Body(r).value("message", ""), "roles.rbac.authorization.k8s.io \"ghost\" not found");
}

TEST_F(RbacApiTest, KubesDefaultClusterRolesAndBindingsExist) {
  for (const char* name : {"cluster-admin", "system:discovery", "system:basic-user",
                           "system:public-info-viewer", "view", "edit", "admin"}) {
    const http::Response r = Get(std::string(kRbac) + "/clusterroles/" + name);
    ASSERT_EQ(r.status, 200) << name << ": " << r.body;
    EXPECT_EQ(Body(r).value("/metadata/labels/kubernetes.io~1bootstrapping"_json_pointer, ""),
              "rbac-defaults");
  }
  const http::Response admin = Get(std::string(kRbac) + "/clusterrolebindings/cluster-admin");
  ASSERT_EQ(admin.status, 200) << admin.body;
  EXPECT_EQ(Body(admin).value("/subjects/0/name"_json_pointer, ""), "system:masters");
}

}  // namespace
}  // namespace sluice::apiserver
