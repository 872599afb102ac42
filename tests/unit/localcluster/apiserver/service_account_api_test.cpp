// ServiceAccounts through the local API server's HTTP API (api_server.h): the default
// ServiceAccount of every namespace, the TokenRequest subresource, requests authenticated with
// the tokens it issues (and refused with kube's 401 once they are not valid), the user in the
// access log, and the ServiceAccount admission of pods, on an in-process server
// (in_process_api_server.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/unit/localcluster/apiserver/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kAccounts[] = "/api/v1/namespaces/default/serviceaccounts";
constexpr char kPods[] = "/api/v1/namespaces/default/pods";

json Pod(const std::string& name, const std::string& account = "") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "main"}, {"image", "sluice/testpod:dev"}}}}}}};
  if (!account.empty()) pod["spec"]["serviceAccountName"] = account;
  return pod;
}

class ServiceAccountApiTest : public InProcessApiServerTest {
 protected:
  void SetUp() override {
    InProcessApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    // These tests are about authentication: RBAC lets every ServiceAccount read
    // (rbac_api_test.cpp tests authorization).
    LetServiceAccountsView();
  }

  // A token for ServiceAccount default/<account> from the TokenRequest API.
  std::string CreateToken(const std::string& account, const json& request = json::object()) {
    const http::Response r = Post(std::string(kAccounts) + "/" + account + "/token", request);
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value("/status/token"_json_pointer, "");
  }

  static void ExpectUnauthorized(const http::Response& r) {
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(Body(r), json::parse(R"({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})"))
        << r.body;
  }
};

TEST_F(ServiceAccountApiTest, EveryNamespaceHasADefaultServiceAccount) {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    const http::Response r =
        Get(std::string("/api/v1/namespaces/") + ns + "/serviceaccounts/default");
    EXPECT_EQ(r.status, 200) << ns << ": " << r.body;
    EXPECT_EQ(Body(r).value("kind", ""), "ServiceAccount");
  }
  ASSERT_EQ(Post("/api/v1/namespaces", {{"metadata", {{"name", "ml"}}}}).status, 201);
  const http::Response ml = Get("/api/v1/namespaces/ml/serviceaccounts/default");
  ASSERT_EQ(ml.status, 200) << ml.body;

  // Deleted, it comes back (a new object), as kube's serviceaccounts controller makes it.
  const std::string uid = Body(ml).value("/metadata/uid"_json_pointer, "");
  ASSERT_EQ(Delete("/api/v1/namespaces/ml/serviceaccounts/default").status, 200);
  const http::Response again = Get("/api/v1/namespaces/ml/serviceaccounts/default");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(Body(again).value("/metadata/uid"_json_pointer, ""), uid);

  // Listed as kubectl lists them, and discoverable with the token subresource.
  const json list = Body(Get(kAccounts));
  EXPECT_EQ(list.value("kind", ""), "ServiceAccountList");
  EXPECT_EQ(list.value("items", json::array()).size(), 1u);
  bool token_subresource = false;
  for (const json& r : Body(Get("/api/v1")).value("resources", json::array())) {
    if (r.value("name", "") == "serviceaccounts/token") {
      token_subresource =
          r.value("kind", "") == "TokenRequest" && r.value("group", "") == "authentication.k8s.io";
    }
  }
  EXPECT_TRUE(token_subresource);
}

TEST_F(ServiceAccountApiTest, IssuedTokensAuthenticateAsTheServiceAccount) {
  ASSERT_EQ(Post(kAccounts, {{"metadata", {{"name", "robot"}}}}).status, 201);
  const std::string token = CreateToken("robot");
  ASSERT_FALSE(token.empty());

  std::unique_ptr<http::Client> robot = Client(token);
  ASSERT_NE(robot, nullptr);
  const http::Response pods = Send(*robot, "GET", kPods);
  EXPECT_EQ(pods.status, 200) << pods.body;
  EXPECT_EQ(Send(*robot, "GET", "/api").status, 200);  // Discovery too.
  EXPECT_TRUE(Logged({"\"path\":\"/api/v1/namespaces/default/pods\"",
                      "\"user\":\"system:serviceaccount:default:robot\""}));
  EXPECT_TRUE(Logged({"\"user\":\"sluice-admin\""}));

  // Anything else is kube's bare 401, the reason only in the server's log.
  ExpectUnauthorized(Send(*Client(""), "GET", kPods));
  ExpectUnauthorized(Send(*Client("not-a-token"), "GET", kPods));
  ExpectUnauthorized(Send(*Client(token + "x"), "GET", kPods));
  EXPECT_TRUE(Logged({"\"status\":401", "token signature is invalid"}));

  // A token for another audience is not one for this server.
  const std::string vault = CreateToken("robot", {{"spec", {{"audiences", {"vault"}}}}});
  ExpectUnauthorized(Send(*Client(vault), "GET", kPods));

  // Deleting the ServiceAccount revokes its tokens; recreating it does not bring them back.
  ASSERT_EQ(Delete(std::string(kAccounts) + "/robot").status, 200);
  ExpectUnauthorized(Send(*robot, "GET", kPods));
  ASSERT_EQ(Post(kAccounts, {{"metadata", {{"name", "robot"}}}}).status, 201);
  ExpectUnauthorized(Send(*robot, "GET", kPods));
  EXPECT_EQ(Send(*Client(CreateToken("robot")), "GET", kPods).status, 200);

  // The subresource only creates; a missing ServiceAccount is 404.
  EXPECT_EQ(Get(std::string(kAccounts) + "/robot/token").status, 405);
  const http::Response missing = Post(std::string(kAccounts) + "/ghost/token", json::object());
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Body(missing).value("message", ""), "serviceaccounts \"ghost\" not found");
}

TEST_F(ServiceAccountApiTest, PodsRunAsAnExistingServiceAccount) {
  const http::Response created = Post(kPods, Pod("web-0"));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Body(created).value("/spec/serviceAccountName"_json_pointer, ""), "default");
  EXPECT_EQ(Body(created).value("/spec/serviceAccount"_json_pointer, ""), "default");

  const http::Response refused = Post(kPods, Pod("web-1", "ghost"));
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(Body(refused).value("reason", ""), "Forbidden");
  EXPECT_EQ(Body(refused).value("message", ""),
            "pods \"web-1\" is forbidden: error looking up service account default/ghost: "
            "serviceaccount \"ghost\" not found");
  EXPECT_EQ(Get(std::string(kPods) + "/web-1").status, 404);

  // A token bound to the pod works while the pod exists, and not after.
  const std::string uid = Body(created).value("/metadata/uid"_json_pointer, "");
  const std::string token = CreateToken(
      "default", {{"spec",
                   {{"expirationSeconds", 3607},
                    {"boundObjectRef",
                     {{"kind", "Pod"}, {"apiVersion", "v1"}, {"name", "web-0"}, {"uid", uid}}}}}});
  std::unique_ptr<http::Client> in_pod = Client(token);
  ASSERT_NE(in_pod, nullptr);
  EXPECT_EQ(Send(*in_pod, "GET", kPods).status, 200);
  const json now = {{"gracePeriodSeconds", 0}};
  ASSERT_EQ(Send(*admin_, "DELETE", std::string(kPods) + "/web-0", now).status, 200);
  ExpectUnauthorized(Send(*in_pod, "GET", kPods));
  EXPECT_TRUE(Logged({"\"status\":401", "pod \\\"default/web-0\\\" not found"}));
}

}  // namespace
}  // namespace sluice::apiserver
