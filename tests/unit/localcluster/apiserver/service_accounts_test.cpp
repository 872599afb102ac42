// ServiceAccounts beyond storage (service_accounts.h): pod defaulting and admission, the default
// ServiceAccount of every namespace; and the Authenticator (authenticator.h) that turns the admin
// token and service-account tokens into users, against MemoryStorage and a FakeClock.
#include "localcluster/apiserver/service_accounts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/apiserver/authenticator.h"
#include "localcluster/apiserver/memory_storage.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kAdminToken[] = "admin-token-0123456789";

const ResourceInfo& Accounts() {
  static const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  return *registry.Find("", "v1", "serviceaccounts");
}

TEST(ServiceAccountsTest, PodsRunAsTheirServiceAccountOrDefault) {
  struct Case {
    const char* name;
    const char* spec;
    const char* account;
  };
  const std::vector<Case> cases = {
      {"nothing set", R"({})", "default"},
      {"serviceAccountName", R"({"serviceAccountName": "robot"})", "robot"},
      {"the deprecated field", R"({"serviceAccount": "legacy"})", "legacy"},
      {"both: the name wins", R"({"serviceAccountName": "robot", "serviceAccount": "x"})", "robot"},
      {"empty name", R"({"serviceAccountName": ""})", "default"},
      {"not a string", R"({"serviceAccountName": 7})", "default"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json pod = {{"metadata", {{"name", "p"}}}, {"spec", json::parse(c.spec)}};
    EXPECT_EQ(PodServiceAccountName(pod), c.account);
    EXPECT_EQ(DefaultPodServiceAccount(pod), c.account);
    EXPECT_EQ(pod["spec"]["serviceAccountName"], c.account);
    EXPECT_EQ(pod["spec"]["serviceAccount"], c.account);
  }
  json no_spec = {{"metadata", {{"name", "p"}}}};
  EXPECT_EQ(DefaultPodServiceAccount(no_spec), "default");
  EXPECT_EQ(no_spec["spec"]["serviceAccountName"], "default");
}

class ServiceAccountStorageTest : public ::testing::Test {
 protected:
  void AddNamespace(const std::string& name, bool terminating = false) {
    json ns = {{"metadata", {{"name", name}, {"uid", "ns-" + name}}}};
    if (terminating) ns["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
    ASSERT_TRUE(storage_.Create(ObjectKey{"core/namespaces", "", name}, ns).ok());
  }
  std::optional<json> Account(const std::string& ns, const std::string& name) {
    Result<Stored> s = storage_.Get(ObjectKey{"core/serviceaccounts", ns, name});
    if (!s.ok()) return std::nullopt;
    return s->object;
  }
  // Creates ServiceAccount ns/name and returns it as stored.
  json AddAccount(const std::string& ns, const std::string& name) {
    Result<json> prepared =
        PrepareCreate(Accounts(), {{"metadata", {{"name", name}}}}, ns, clock_.WallNow());
    EXPECT_TRUE(prepared.ok());
    Result<Stored> stored = storage_.Create(ObjectKey{"core/serviceaccounts", ns, name}, *prepared);
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    return stored.ok() ? stored->object : json();
  }

  FakeClock clock_;
  MemoryStorage storage_;
};

TEST_F(ServiceAccountStorageTest, EveryLiveNamespaceGetsADefaultServiceAccountOnce) {
  AddNamespace("default");
  AddNamespace("ml");
  AddNamespace("leaving", /*terminating=*/true);
  ASSERT_TRUE(EnsureDefaultServiceAccounts(storage_, Accounts(), clock_.WallNow()).ok());
  const std::optional<json> account = Account("ml", "default");
  ASSERT_TRUE(account.has_value());
  EXPECT_EQ(account->value("apiVersion", ""), "v1");
  EXPECT_EQ(account->value("kind", ""), "ServiceAccount");
  EXPECT_EQ(account->value("/metadata/namespace"_json_pointer, ""), "ml");
  EXPECT_FALSE(account->value("/metadata/uid"_json_pointer, "").empty());
  EXPECT_TRUE(Account("default", "default").has_value());
  EXPECT_FALSE(Account("leaving", "default").has_value());

  // Again: nothing changes (the same uid), and a missing namespace is no error.
  ASSERT_TRUE(EnsureDefaultServiceAccounts(storage_, Accounts(), clock_.WallNow()).ok());
  EXPECT_EQ(Account("ml", "default")->value("/metadata/uid"_json_pointer, ""),
            account->value("/metadata/uid"_json_pointer, ""));
  EXPECT_TRUE(EnsureDefaultServiceAccount(storage_, Accounts(), "nowhere", clock_.WallNow()).ok());
  EXPECT_FALSE(Account("nowhere", "default").has_value());
}

TEST_F(ServiceAccountStorageTest, PodAdmissionDefaultsAndNeedsTheServiceAccount) {
  AddNamespace("ml");
  AddAccount("ml", "default");
  AddAccount("ml", "robot");
  json plain = {{"metadata", {{"name", "web-0"}}}, {"spec", json::object()}};
  ASSERT_TRUE(AdmitPodServiceAccount(storage_, plain, "ml").ok());
  EXPECT_EQ(plain["spec"]["serviceAccountName"], "default");
  json robot = {{"metadata", {{"name", "web-1"}}}, {"spec", {{"serviceAccountName", "robot"}}}};
  EXPECT_TRUE(AdmitPodServiceAccount(storage_, robot, "ml").ok());

  json ghost = {{"metadata", {{"name", "web-2"}}}, {"spec", {{"serviceAccountName", "ghost"}}}};
  const Status refused = AdmitPodServiceAccount(storage_, ghost, "ml");
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.message(),
            "pods \"web-2\" is forbidden: error looking up service account ml/ghost: "
            "serviceaccount \"ghost\" not found");
}

class AuthenticatorTest : public ServiceAccountStorageTest {
 protected:
  void SetUp() override {
    settings_.signing_key = "authenticator-test-key";
    AddNamespace("ml");
    robot_ = AddAccount("ml", "robot");
    pod_ = {{"metadata", {{"name", "web-0"}, {"namespace", "ml"}, {"uid", "pod-1"}}},
            {"spec", {{"serviceAccountName", "robot"}}}};
    ASSERT_TRUE(storage_.Create(ObjectKey{"core/pods", "ml", "web-0"}, pod_).ok());
  }

  Authenticator Make(bool with_admin_token = true) {
    return Authenticator(with_admin_token ? http::TokenSource::FromValue(kAdminToken) : nullptr,
                         settings_, &storage_, &clock_);
  }
  // A one-hour token of ml/robot, bound to pod web-0 when `pod_bound`.
  std::string Token(bool pod_bound = false) {
    ServiceAccountClaims claims =
        NewClaims(robot_, settings_.issuer, settings_.ApiAudiences(), clock_.WallNow(), 3600);
    if (pod_bound) claims.pod = RefOf(pod_);
    return "Bearer " + SignToken(claims, settings_.signing_key);
  }

  TokenSettings settings_;
  json robot_;
  json pod_;
};

TEST_F(AuthenticatorTest, AdminTokenAndServiceAccountTokens) {
  const Authenticator authenticator = Make();
  Result<UserInfo> admin = authenticator.Authenticate(std::string("Bearer ") + kAdminToken);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  EXPECT_EQ(admin->name, "sluice-admin");
  EXPECT_TRUE(admin->InGroup("system:masters"));

  Result<UserInfo> robot = authenticator.Authenticate(Token());
  ASSERT_TRUE(robot.ok()) << robot.status().ToString();
  EXPECT_EQ(robot->name, "system:serviceaccount:ml:robot");
  EXPECT_EQ(robot->uid, robot_.value("/metadata/uid"_json_pointer, ""));
  EXPECT_EQ(robot->groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ml",
                                      "system:authenticated"}));
  Result<UserInfo> in_pod = authenticator.Authenticate(Token(/*pod_bound=*/true));
  ASSERT_TRUE(in_pod.ok()) << in_pod.status().ToString();
  EXPECT_EQ(in_pod->extra.at("authentication.kubernetes.io/pod-name"),
            std::vector<std::string>{"web-0"});

  struct Case {
    const char* name;
    std::string header;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no header", "", "no bearer token"},
      {"basic auth", "Basic dXNlcjpwYXNz", "is not \"Bearer <token>\""},
      {"a wrong admin token", "Bearer admin-token-0000000000", "three dot-separated parts"},
      {"a token signed elsewhere",
       "Bearer " + SignToken(NewClaims(robot_, settings_.issuer, settings_.ApiAudiences(),
                                       clock_.WallNow(), 3600),
                             "another cluster's key"),
       "token signature is invalid"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<UserInfo> user = authenticator.Authenticate(c.header);
    ASSERT_FALSE(user.ok());
    EXPECT_EQ(user.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(user.status().message().find(c.message), std::string::npos)
        << user.status().message();
  }
}

TEST_F(AuthenticatorTest, TokensExpireAndDieWithTheirServiceAccountOrPod) {
  const Authenticator authenticator = Make();
  const std::string token = Token();

  // Expiry, with kube's minute of leeway.
  clock_.Advance(seconds(3600 + 60));
  EXPECT_TRUE(authenticator.Authenticate(token).ok());
  clock_.Advance(seconds(1));
  EXPECT_EQ(authenticator.Authenticate(token).status().message(),
            "service account token has expired");

  // Fresh tokens; then the pod goes: only the pod-bound one stops working.
  const std::string fresh = Token();
  const std::string fresh_pod = Token(/*pod_bound=*/true);
  ASSERT_TRUE(storage_.Delete(ObjectKey{"core/pods", "ml", "web-0"}, std::nullopt).ok());
  EXPECT_TRUE(authenticator.Authenticate(fresh).ok());
  EXPECT_NE(authenticator.Authenticate(fresh_pod).status().message().find("pod \"ml/web-0\""),
            std::string::npos);

  // The ServiceAccount goes, then comes back under the same name: its old tokens stay dead.
  ASSERT_TRUE(storage_.Delete(ObjectKey{"core/serviceaccounts", "ml", "robot"}, std::nullopt).ok());
  EXPECT_EQ(authenticator.Authenticate(fresh).status().code(), StatusCode::kUnauthenticated);
  const json reborn = AddAccount("ml", "robot");
  ASSERT_NE(reborn.value("/metadata/uid"_json_pointer, ""),
            robot_.value("/metadata/uid"_json_pointer, ""));
  EXPECT_NE(authenticator.Authenticate(fresh).status().message().find("does not match claim"),
            std::string::npos);
  robot_ = reborn;
  EXPECT_TRUE(authenticator.Authenticate(Token()).ok());
}

TEST_F(AuthenticatorTest, WithoutAnAdminTokenEveryoneIsUnsecured) {
  const Authenticator authenticator = Make(/*with_admin_token=*/false);
  for (const std::string& header : {std::string(), std::string("Bearer whatever"), Token()}) {
    Result<UserInfo> user = authenticator.Authenticate(header);
    ASSERT_TRUE(user.ok());
    EXPECT_EQ(user->name, "system:unsecured");
  }
  EXPECT_EQ(UnauthorizedStatusJson(),
            json::parse(R"({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized",
                "code": 401})"));
}

}  // namespace
}  // namespace sluice::apiserver
