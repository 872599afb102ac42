// Service-account token claims (service_account_token.h): their JSON, and the table of checks that
// decide whether a token is a user: issuer, audience, expiry (with kube's leeway), signature, and
// the ServiceAccount, pod and Secret it names as they are now (deleted, recreated with a new uid).
#include "localcluster/apiserver/service_account_token.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/apiserver/jwt.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kKey[] = "signing-key-for-tests";
constexpr int64_t kIssuedAt = 1767225600;  // 2026-01-01T00:00:00Z.
const Clock::WallTime kIssueTime = Clock::WallTime(seconds(kIssuedAt));

json Object(const std::string& name, const std::string& uid, const std::string& ns = "ml") {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}}};
}

json Deleting(json object, Clock::WallTime at) {
  const std::time_t t = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(at));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  object["metadata"]["deletionTimestamp"] = buf;
  return object;
}

// A one-hour token of ServiceAccount ml/robot (uid sa-1) for the default audience.
ServiceAccountClaims RobotClaims() {
  return NewClaims(Object("robot", "sa-1"), kDefaultTokenIssuer, {kDefaultTokenIssuer}, kIssueTime,
                   3600);
}

TEST(ServiceAccountTokenTest, ClaimsAreKubesAndRoundTrip) {
  ServiceAccountClaims claims = RobotClaims();
  claims.pod = ObjectRef{"web-0", "pod-1"};
  claims.node = ObjectRef{"east-gpu", "node-1"};
  EXPECT_FALSE(claims.id.empty());
  EXPECT_NE(claims.id, RobotClaims().id);  // A fresh jti per token.
  const json payload = ClaimsJson(claims);
  EXPECT_EQ(payload["iss"], "https://kubernetes.default.svc.cluster.local");
  EXPECT_EQ(payload["sub"], "system:serviceaccount:ml:robot");
  EXPECT_EQ(payload["aud"], json::array({"https://kubernetes.default.svc.cluster.local"}));
  EXPECT_EQ(payload["iat"], kIssuedAt);
  EXPECT_EQ(payload["nbf"], kIssuedAt);
  EXPECT_EQ(payload["exp"], kIssuedAt + 3600);
  EXPECT_EQ(payload["jti"], claims.id);
  EXPECT_EQ(payload["kubernetes.io"], json::parse(R"({"namespace": "ml",
      "serviceaccount": {"name": "robot", "uid": "sa-1"},
      "pod": {"name": "web-0", "uid": "pod-1"},
      "node": {"name": "east-gpu", "uid": "node-1"}})"));

  Result<ServiceAccountClaims> parsed = ParseClaims(payload);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, claims);

  Result<ServiceAccountClaims> read = ReadToken(SignToken(claims, kKey), kKey);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, claims);
  // A single audience may also be a string (RFC 7519); fractional dates are floored.
  json variant = payload;
  variant["aud"] = "https://kubernetes.default.svc.cluster.local";
  variant["exp"] = kIssuedAt + 3600.75;
  parsed = ParseClaims(variant);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->audiences, claims.audiences);
  EXPECT_EQ(parsed->expiry, kIssuedAt + 3600);
}

TEST(ServiceAccountTokenTest, IncompleteOrInconsistentClaimsAreMalformed) {
  const json good = ClaimsJson(RobotClaims());
  struct Case {
    const char* name;
    const char* pointer;  // What to change ...
    json value;           // ... to this (null: remove it).
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no issuer", "/iss", nullptr, "iss is missing"},
      {"no subject", "/sub", nullptr, "sub is missing"},
      {"no audience", "/aud", nullptr, "aud is missing"},
      {"audience not a string", "/aud", json::array({7}), "aud holds a non-string"},
      {"no expiry", "/exp", nullptr, "exp is missing"},
      {"expiry a string", "/exp", "tomorrow", "exp is not a number"},
      {"no private claims", "/kubernetes.io", nullptr, "kubernetes.io is missing"},
      {"no namespace", "/kubernetes.io/namespace", nullptr, "kubernetes.io.namespace is missing"},
      {"no service account uid", "/kubernetes.io/serviceaccount/uid", nullptr,
       "kubernetes.io.serviceaccount.uid is missing"},
      {"pod without uid", "/kubernetes.io/pod", json{{"name", "web-0"}},
       "kubernetes.io.pod.uid is missing"},
      {"subject names another account", "/sub", "system:serviceaccount:kube-system:robot",
       "does not name the token's service account"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json payload = good;
    const json::json_pointer pointer(c.pointer);
    if (c.value.is_null()) {
      payload[pointer.parent_pointer()].erase(pointer.back());
    } else {
      payload[pointer] = c.value;
    }
    Result<ServiceAccountClaims> parsed = ParseClaims(payload);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(parsed.status().message().find(c.message), std::string::npos)
        << parsed.status().message();
  }
  // A token signed with another key never gets as far as its claims.
  Result<ServiceAccountClaims> foreign = ReadToken(SignToken(RobotClaims(), "other"), kKey);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().message(), "token signature is invalid");
}

TEST(ServiceAccountTokenTest, IssuerAudienceAndTimeChecks) {
  const std::vector<std::string> api_audiences = {kDefaultTokenIssuer, "sluice"};
  struct Case {
    const char* name;
    std::string issuer;
    std::vector<std::string> audiences;
    int64_t now_offset;  // Seconds after kIssuedAt.
    const char* error;   // "" when the claims pass.
  };
  const std::vector<Case> cases = {
      {"fresh", kDefaultTokenIssuer, {kDefaultTokenIssuer}, 0, ""},
      {"second audience", kDefaultTokenIssuer, {"vault", "sluice"}, 10, ""},
      {"just before expiry", kDefaultTokenIssuer, {kDefaultTokenIssuer}, 3599, ""},
      {"expired, within the leeway", kDefaultTokenIssuer, {kDefaultTokenIssuer}, 3600 + 60, ""},
      {"expired",
       kDefaultTokenIssuer,
       {kDefaultTokenIssuer},
       3600 + 61,
       "service account token has expired"},
      {"clock behind, within the leeway", kDefaultTokenIssuer, {kDefaultTokenIssuer}, -60, ""},
      {"not valid yet",
       kDefaultTokenIssuer,
       {kDefaultTokenIssuer},
       -61,
       "service account token is not valid yet"},
      {"another issuer",
       "https://elsewhere",
       {kDefaultTokenIssuer},
       0,
       "token issuer \"https://elsewhere\" is not"},
      {"another audience",
       kDefaultTokenIssuer,
       {"vault"},
       0,
       "token audiences [\"vault\"] is invalid for the target audiences"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServiceAccountClaims claims = RobotClaims();
    claims.issuer = c.issuer;
    claims.audiences = c.audiences;
    const Status s =
        CheckClaims(claims, kDefaultTokenIssuer, api_audiences, kIssueTime + seconds(c.now_offset));
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
      EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    }
  }
  // A token issued in the future (nbf left out) is refused too.
  ServiceAccountClaims future = RobotClaims();
  future.not_before = 0;
  future.issued_at = kIssuedAt + 600;
  EXPECT_EQ(CheckClaims(future, kDefaultTokenIssuer, api_audiences, kIssueTime).message(),
            "service account token is issued in the future");
}

TEST(ServiceAccountTokenTest, BoundObjectsMustStillBeThere) {
  const Clock::WallTime now = kIssueTime + seconds(100);
  ServiceAccountClaims plain = RobotClaims();
  ServiceAccountClaims pod_bound = RobotClaims();
  pod_bound.pod = ObjectRef{"web-0", "pod-1"};
  pod_bound.node = ObjectRef{"east-gpu", "node-1"};
  ServiceAccountClaims secret_bound = RobotClaims();
  secret_bound.secret = ObjectRef{"robot-token", "secret-1"};
  const json robot = Object("robot", "sa-1");
  const json pod = Object("web-0", "pod-1");
  struct Case {
    const char* name;
    const ServiceAccountClaims* claims;
    BoundObjects objects;
    const char* error;  // "" when the token is a user.
  };
  const std::vector<Case> cases = {
      {"service account there", &plain, {robot, std::nullopt, std::nullopt}, ""},
      {"service account deleted",
       &plain,
       {std::nullopt, std::nullopt, std::nullopt},
       "service account token has been invalidated: serviceaccount \"ml/robot\" not found"},
      {"service account recreated under the same name",
       &plain,
       {Object("robot", "sa-2"), std::nullopt, std::nullopt},
       "service account UID (sa-2) does not match claim (sa-1)"},
      {"service account being deleted for long",
       &plain,
       {Deleting(robot, now - seconds(61)), std::nullopt, std::nullopt},
       "has been deleted"},
      {"service account being deleted just now",
       &plain,
       {Deleting(robot, now - seconds(59)), std::nullopt, std::nullopt},
       ""},
      {"pod there", &pod_bound, {robot, pod, std::nullopt}, ""},
      {"pod deleted",
       &pod_bound,
       {robot, std::nullopt, std::nullopt},
       "service account token has been invalidated: pod \"ml/web-0\" not found"},
      {"pod recreated",
       &pod_bound,
       {robot, Object("web-0", "pod-2"), std::nullopt},
       "pod UID (pod-2) does not match claim (pod-1)"},
      // A terminating pod's deletionTimestamp is the end of its grace period.
      {"pod terminating, grace period running",
       &pod_bound,
       {robot, Deleting(pod, now + seconds(30)), std::nullopt},
       ""},
      {"pod past its grace period for long",
       &pod_bound,
       {robot, Deleting(pod, now - seconds(61)), std::nullopt},
       "has been deleted"},
      {"pod-bound, service account gone",
       &pod_bound,
       {std::nullopt, pod, std::nullopt},
       "serviceaccount \"ml/robot\" not found"},
      {"secret there", &secret_bound, {robot, std::nullopt, Object("robot-token", "secret-1")}, ""},
      {"secret deleted",
       &secret_bound,
       {robot, std::nullopt, std::nullopt},
       "secret \"ml/robot-token\" not found"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<UserInfo> user = UserForClaims(*c.claims, c.objects, now);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(user.ok()) << user.status().ToString();
    } else {
      ASSERT_FALSE(user.ok());
      EXPECT_EQ(user.status().code(), StatusCode::kUnauthenticated);
      EXPECT_NE(user.status().message().find(c.error), std::string::npos)
          << user.status().message();
    }
  }
}

TEST(ServiceAccountTokenTest, TheUserIsKubesServiceAccountIdentity) {
  ServiceAccountClaims claims = RobotClaims();
  claims.pod = ObjectRef{"web-0", "pod-1"};
  claims.node = ObjectRef{"east-gpu", "node-1"};
  Result<UserInfo> user = UserForClaims(
      claims, {Object("robot", "sa-1"), Object("web-0", "pod-1"), std::nullopt}, kIssueTime);
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(user->name, "system:serviceaccount:ml:robot");
  EXPECT_EQ(user->uid, "sa-1");
  EXPECT_EQ(user->groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ml",
                                      "system:authenticated"}));
  EXPECT_TRUE(user->InGroup("system:serviceaccounts:ml"));
  EXPECT_FALSE(user->InGroup("system:masters"));
  const std::map<std::string, std::vector<std::string>> extra = {
      {"authentication.kubernetes.io/credential-id", {"JTI=" + claims.id}},
      {"authentication.kubernetes.io/node-name", {"east-gpu"}},
      {"authentication.kubernetes.io/node-uid", {"node-1"}},
      {"authentication.kubernetes.io/pod-name", {"web-0"}},
      {"authentication.kubernetes.io/pod-uid", {"pod-1"}}};
  EXPECT_EQ(user->extra, extra);

  EXPECT_EQ(AdminUser().name, "sluice-admin");
  EXPECT_TRUE(AdminUser().InGroup("system:masters"));
  EXPECT_TRUE(UnsecuredUser().InGroup("system:authenticated"));
  EXPECT_EQ(ServiceAccountUsername("kube-system", "default"),
            "system:serviceaccount:kube-system:default");
}

}  // namespace
}  // namespace sluice::apiserver
