// The TokenRequest subresource (token_request.h): parsing and validating the request, and serving
// it against storage: unbound, pod-bound and secret-bound tokens, and kube's errors.
#include "localcluster/apiserver/token_request.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "localcluster/apiserver/memory_storage.h"

namespace sluice::apiserver {
namespace token_request_test {

using nlohmann::json;
using std::chrono::seconds;

const Clock::WallTime kNow = Clock::WallTime(seconds(1767225600));  // 2026-01-01T00:00:00Z.

TEST(TokenRequestTest, SpecDefaultsAndValidation) {
  Result<TokenRequestSpec> empty = ParseTokenRequestSpec(json::object(), "ml");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->audiences.empty());
  EXPECT_EQ(empty->expiration_seconds, 3600);
  EXPECT_FALSE(empty->bound_object.has_value());

  // What kubectl create token --duration 20m --audience a --bound-object-kind Pod sends (the
  // protobuf decoder spells unset fields as null).
  Result<TokenRequestSpec> full = ParseTokenRequestSpec(json::parse(R"({
      "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
      "metadata": {"creationTimestamp": null},
      "spec": {"audiences": ["a", "b"], "expirationSeconds": 1200,
               "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}},
      "status": {"token": "", "expirationTimestamp": null}})"),
                                                        "ml");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->audiences, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(full->expiration_seconds, 1200);
  ASSERT_TRUE(full->bound_object.has_value());
  EXPECT_EQ(full->bound_object->kind, "Pod");
  EXPECT_EQ(full->bound_object->name, "web-0");
  EXPECT_EQ(full->bound_object->uid, "");
  Result<TokenRequestSpec> nulls =
      ParseTokenRequestSpec(json::parse(R"({"spec": {"audiences": null, "expirationSeconds": null,
                               "boundObjectRef": null}})"),
                            "ml");
  ASSERT_TRUE(nulls.ok()) << nulls.status().ToString();
  EXPECT_EQ(nulls->expiration_seconds, 3600);

  struct Case {
    const char* name;
    const char* body;
    StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"too short", R"({"spec": {"expirationSeconds": 599}})", StatusCode::kUnprocessable,
       "Invalid value: 599: may not specify a duration less than 10 minutes"},
      {"too long", R"({"spec": {"expirationSeconds": 4294967297}})", StatusCode::kUnprocessable,
       "Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"},
      {"expiration a string", R"({"spec": {"expirationSeconds": "1h"}})",
       StatusCode::kInvalidArgument, "spec.expirationSeconds: must be an integer"},
      {"audiences a string", R"({"spec": {"audiences": "a"}})", StatusCode::kInvalidArgument,
       "spec.audiences: must be a list of strings"},
      {"another kind", R"({"kind": "TokenReview"})", StatusCode::kInvalidArgument,
       "the kind in the data (TokenReview) does not match the expected kind (TokenRequest)"},
      {"another namespace", R"({"metadata": {"namespace": "prod"}})", StatusCode::kInvalidArgument,
       "does not match the namespace sent on the request"},
      {"bound name a number", R"({"spec": {"boundObjectRef": {"name": 3}}})",
       StatusCode::kInvalidArgument, "spec.boundObjectRef.name: must be a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<TokenRequestSpec> spec = ParseTokenRequestSpec(json::parse(c.body), "ml");
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), c.code);
    EXPECT_NE(spec.status().message().find(c.message), std::string::npos)
        << spec.status().message();
  }
  // The limits themselves are allowed.
  EXPECT_TRUE(
      ParseTokenRequestSpec(json::parse(R"({"spec": {"expirationSeconds": 600}})"), "ml").ok());
}

class ServeTokenRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings_.signing_key = "test-key";
    Put("core/serviceaccounts", "robot", "sa-1");
    Put("core/serviceaccounts", "other", "sa-2");
    Put("core/pods", "web-0", "pod-1", {{"serviceAccountName", "robot"}});
    Put("core/pods", "scheduled", "pod-2",
        {{"serviceAccountName", "robot"}, {"nodeName", "east-gpu"}});
    Put("core/secrets", "robot-token", "secret-1");
    Result<Stored> node =
        storage_.Create(ObjectKey{"core/nodes", "", "east-gpu"},
                        {{"metadata", {{"name", "east-gpu"}, {"uid", "node-1"}}}});
    ASSERT_TRUE(node.ok());
  }

  json Put(const std::string& resource, const std::string& name, const std::string& uid,
           json spec = nullptr) {
    json object = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}}}};
    if (!spec.is_null()) object["spec"] = std::move(spec);
    Result<Stored> stored = storage_.Create(ObjectKey{resource, "ml", name}, object);
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    return object;
  }

  TokenRequestReply Serve(const std::string& name, const json& body) {
    return ServeTokenRequest(storage_, settings_, "ml", name, body, kNow);
  }

  // The claims of the token in a 201 reply.
  ServiceAccountClaims Claims(const TokenRequestReply& reply) {
    EXPECT_EQ(reply.code, 201) << reply.body.dump();
    Result<ServiceAccountClaims> claims =
        ReadToken(reply.body.value("/status/token"_json_pointer, ""), settings_.signing_key);
    EXPECT_TRUE(claims.ok()) << claims.status().ToString();
    return claims.ok() ? *claims : ServiceAccountClaims{};
  }

  MemoryStorage storage_;
  TokenSettings settings_;
};

TEST_F(ServeTokenRequestTest, IssuesATokenForTheServiceAccount) {
  const TokenRequestReply reply = Serve("robot", json::object());
  ASSERT_EQ(reply.code, 201) << reply.body.dump();
  const json& body = reply.body;
  EXPECT_EQ(body["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(body["kind"], "TokenRequest");
  EXPECT_EQ(body["metadata"], json::parse(R"({"name": "robot", "namespace": "ml",
      "creationTimestamp": null})"));
  EXPECT_EQ(body["spec"], json::parse(R"({"audiences":
      ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": 3600,
      "boundObjectRef": null})"));
  EXPECT_EQ(body["status"]["expirationTimestamp"], "2026-01-01T01:00:00Z");

  const ServiceAccountClaims claims = Claims(reply);
  EXPECT_EQ(claims.namespace_, "ml");
  EXPECT_EQ(claims.service_account, (ObjectRef{"robot", "sa-1"}));
  EXPECT_EQ(claims.expiry - claims.issued_at, 3600);
  EXPECT_FALSE(claims.pod.has_value());
  EXPECT_TRUE(CheckClaims(claims, settings_.issuer, settings_.ApiAudiences(), kNow).ok());

  // Audiences and a lifetime of the caller's choosing.
  const TokenRequestReply vault =
      Serve("robot", {{"spec", {{"audiences", {"vault"}}, {"expirationSeconds", 7200}}}});
  const ServiceAccountClaims vault_claims = Claims(vault);
  EXPECT_EQ(vault_claims.audiences, (std::vector<std::string>{"vault"}));
  EXPECT_EQ(vault_claims.expiry - vault_claims.issued_at, 7200);
  EXPECT_FALSE(CheckClaims(vault_claims, settings_.issuer, settings_.ApiAudiences(), kNow).ok());
}

TEST_F(ServeTokenRequestTest, PodAndSecretBoundTokensNameTheirObject) {
  const ServiceAccountClaims pod = Claims(
      Serve("robot",
            {{"spec",
              {{"boundObjectRef",
                {{"kind", "Pod"}, {"apiVersion", "v1"}, {"name", "web-0"}, {"uid", "pod-1"}}}}}}));
  EXPECT_EQ(pod.pod, (ObjectRef{"web-0", "pod-1"}));
  EXPECT_FALSE(pod.node.has_value());  // Not scheduled.
  const ServiceAccountClaims scheduled = Claims(Serve(
      "robot",
      {{"spec",
        {{"boundObjectRef", {{"kind", "Pod"}, {"apiVersion", "v1"}, {"name", "scheduled"}}}}}}));
  EXPECT_EQ(scheduled.pod, (ObjectRef{"scheduled", "pod-2"}));
  EXPECT_EQ(scheduled.node, (ObjectRef{"east-gpu", "node-1"}));
  const TokenRequestReply secret_reply =
      Serve("robot", {{"spec",
                       {{"boundObjectRef",
                         {{"kind", "Secret"}, {"apiVersion", "v1"}, {"name", "robot-token"}}}}}});
  EXPECT_EQ(Claims(secret_reply).secret, (ObjectRef{"robot-token", "secret-1"}));
  EXPECT_EQ(secret_reply.body["spec"]["boundObjectRef"],
            json::parse(R"({"kind": "Secret", "apiVersion": "v1", "name": "robot-token"})"));
}

TEST_F(ServeTokenRequestTest, KubesErrors) {
  auto bound = [](const std::string& kind, const std::string& api_version, const std::string& name,
                  const std::string& uid = "") {
    json ref = {{"kind", kind}, {"apiVersion", api_version}, {"name", name}};
    if (!uid.empty()) ref["uid"] = uid;
    return json{{"spec", {{"boundObjectRef", ref}}}};
  };
  struct Case {
    const char* name;
    std::string account;
    json body;
    int code;
    const char* reason;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"no such service account", "ghost", json::object(), 404, "NotFound",
       "serviceaccounts \"ghost\" not found"},
      {"no such pod", "robot", bound("Pod", "v1", "web-9"), 404, "NotFound",
       "pods \"web-9\" not found"},
      {"pod of another service account", "other", bound("Pod", "v1", "web-0"), 400, "BadRequest",
       "cannot bind token for serviceaccount \"other\" to pod running with serviceaccount "
       "\"robot\""},
      {"pod recreated", "robot", bound("Pod", "v1", "web-0", "pod-0"), 409, "Conflict",
       "Operation cannot be fulfilled on Pod \"web-0\": the UID in the bound object reference "
       "(pod-0) does not match the UID in record (pod-1). The object might have been deleted and "
       "then recreated"},
      {"no such secret", "robot", bound("Secret", "v1", "gone"), 404, "NotFound",
       "secrets \"gone\" not found"},
      {"unsupported kind", "robot", bound("Deployment", "apps/v1", "web"), 400, "BadRequest",
       "cannot bind token to object of type apps/v1, Kind=Deployment"},
      {"too short",
       "robot",
       {{"spec", {{"expirationSeconds", 60}}}},
       422,
       "Invalid",
       "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: Invalid "
       "value: 60: may not specify a duration less than 10 minutes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TokenRequestReply reply = Serve(c.account, c.body);
    EXPECT_EQ(reply.code, c.code) << reply.body.dump();
    EXPECT_EQ(reply.body.value("kind", ""), "Status");
    EXPECT_EQ(reply.body.value("reason", ""), c.reason);
    EXPECT_EQ(reply.body.value("message", ""), c.message);
  }
}

}  // namespace token_request_test
}  // namespace sluice::apiserver
