// CRD writes over HTTP refused the way kube-apiserver 1.30 refuses them (crd_schema_checks.h):
// fields 1.30 does not know (400 under fieldValidation=Strict, a Warning and pruned under Warn),
// the root metadata invariant and defaults failing their own rules (422 Invalid, one cause each).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "tests/support/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kToken[] = "crd-admission-test-token";
constexpr char kCrds[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

// A CRD <plural>.example.dev (kind from the plural) of one version whose openAPIV3Schema is
// `schema` (JSON text).
json Crd(const std::string& plural, const std::string& kind, const std::string& schema) {
  json version = {{"name", "v1"}, {"served", true}, {"storage", true}};
  version["schema"]["openAPIV3Schema"] = json::parse(schema);
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"}, {"kind", "CustomResourceDefinition"}};
  crd["metadata"]["name"] = plural + ".example.dev";
  crd["spec"] = {{"group", "example.dev"}, {"scope", "Namespaced"}};
  crd["spec"]["names"] = {{"plural", plural}, {"kind", kind}};
  crd["spec"]["versions"] = json::array();
  crd["spec"]["versions"].push_back(std::move(version));
  return crd;
}

class CrdAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_support::InProcessApiServerOptions options;
    options.token = kToken;
    Result<std::unique_ptr<test_support::InProcessApiServer>> server =
        test_support::InProcessApiServer::Create(options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    http::ClientOptions client;
    client.base_url = server_->base_url();
    client.token = http::TokenSource::FromValue(kToken);
    client.max_attempts = 1;
    Result<std::unique_ptr<http::Client>> created = http::Client::Create(client);
    ASSERT_TRUE(created.ok()) << created.status().message();
    client_ = std::move(*created);
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  http::Response Send(const std::string& method, const std::string& path, const json& body) {
    http::Request request;
    request.method = method;
    request.path = path;
    if (!body.is_null()) {
      request.body = body.dump();
      request.content_type = "application/json";
    }
    Result<http::Response> reply = client_->Send(std::move(request));
    if (!reply.ok()) {
      ADD_FAILURE() << method << " " << path << ": " << reply.status().message();
      return http::Response{};
    }
    return std::move(*reply);
  }

  std::unique_ptr<test_support::InProcessApiServer> server_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(CrdAdmissionTest, UnknownRuleFieldIsRefusedUnderStrictAndPrunedWithAWarningUnderWarn) {
  const json crd = Crd("widgets", "Widget", R"({"type": "object", "properties": {"spec": {
      "type": "object", "x-kubernetes-validations": [{"rule": "true", "severity": "high"}]}}})");
  const std::string field =
      "spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validations[0]."
      "severity";

  http::Response r = Send("POST", std::string(kCrds) + "?fieldValidation=Strict", crd);
  EXPECT_EQ(r.status, 400) << r.body;
  const json refused = json::parse(r.body, nullptr, false);
  EXPECT_EQ(refused.value("reason", ""), "BadRequest") << r.body;
  EXPECT_EQ(refused.value("message", ""),
            "CustomResourceDefinition in version \"v1\" cannot be handled as a "
            "CustomResourceDefinition: strict decoding error: unknown field \"" +
                field + "\"")
      << r.body;
  EXPECT_EQ(Send("GET", std::string(kCrds) + "/widgets.example.dev", nullptr).status, 404);

  // The default, Warn: created without the field, a Warning saying so.
  r = Send("POST", kCrds, crd);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Warning"), "299 - \"unknown field \\\"" + field + "\\\"\"");
  const json stored = json::parse(
      Send("GET", std::string(kCrds) + "/widgets.example.dev", nullptr).body, nullptr, false);
  EXPECT_EQ(
      stored.value(
          "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations"_json_pointer,
          json()),
      json::parse(R"([{"rule": "true"}])"));
}

TEST_F(CrdAdmissionTest, SchemasKubeRefusesAreInvalidWithKubesCause) {
  struct Case {
    const char* plural;
    const char* kind;
    const char* schema;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"gadgets", "Gadget",
       R"({"type": "object", "properties": {"metadata": {"type": "object",
           "description": "Standard object metadata."}}})",
       "spec.versions[0].schema.openAPIV3Schema.properties[metadata]",
       "Forbidden: must not specify anything other than name and generateName, but metadata is "
       "implicitly specified"},
      {"gizmos", "Gizmo",
       R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {
           "batch": {"type": "object", "default": {},
             "properties": {"minibatches": {"type": "integer", "default": 1},
                            "groupsPerBatch": {"type": "integer", "default": 32}},
             "x-kubernetes-validations": [{"rule": "self.minibatches <= self.groupsPerBatch",
               "message": "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch",
               "fieldPath": ".minibatches"}]}}}}})",
       "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[batch].default",
       "Invalid value: \"object\": no such key: minibatches evaluating rule: "
       "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch"},
  };
  for (const Case& c : cases) {
    const http::Response r = Send("POST", kCrds, Crd(c.plural, c.kind, c.schema));
    EXPECT_EQ(r.status, 422) << c.plural << ": " << r.body;
    const json body = json::parse(r.body, nullptr, false);
    EXPECT_EQ(body.value("reason", ""), "Invalid") << r.body;
    EXPECT_EQ(body.value("/details/causes"_json_pointer, json()),
              json::array({{{"reason", std::string(c.message).rfind("Forbidden", 0) == 0
                                           ? "FieldValueForbidden"
                                           : "FieldValueInvalid"},
                            {"message", c.message},
                            {"field", c.field}}}))
        << r.body;
    EXPECT_EQ(body.value("message", ""),
              "CustomResourceDefinition.apiextensions.k8s.io \"" + std::string(c.plural) +
                  ".example.dev\" is invalid: " + c.field + ": " + c.message)
        << r.body;
  }
}

}  // namespace
}  // namespace sluice::apiserver
