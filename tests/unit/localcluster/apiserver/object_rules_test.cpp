// Metadata rules of creates and updates, CR admission against a CRD, and error bodies.
#include "localcluster/apiserver/object_rules.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/time_format.h"
#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/custom_resources.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

const Clock::WallTime kNow = Clock::WallTime(std::chrono::seconds(1795000000));

const ResourceInfo& Find(const ResourceRegistry& r, const char* group, const char* version,
                         const char* plural) {
  const ResourceInfo* info = r.Find(group, version, plural);
  EXPECT_NE(info, nullptr) << plural;
  return *info;
}

json LoadCrd(const std::string& file) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/crds/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto docs = yaml::ParseDocuments(text.str());
  EXPECT_TRUE(docs.ok());
  return docs->front();
}

TEST(ApiserverObjectRulesTest, CreateFillsServerFields) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& cms = Find(registry, "", "v1", "configmaps");
  json cm = {{"metadata", {{"generateName", "cfg-"}, {"managedFields", json::array()}}},
             {"data", {{"a", "b"}}}};
  Result<json> out = PrepareCreate(cms, cm, "ml", kNow);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const json& meta = (*out)["metadata"];
  EXPECT_TRUE(std::regex_match(meta["name"].get<std::string>(),
                               std::regex("cfg-[bcdfghjklmnpqrstvwxz2456789]{5}")));
  EXPECT_EQ(meta["namespace"], "ml");
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_EQ(meta["creationTimestamp"], FormatTime(kNow));
  EXPECT_TRUE(std::regex_match(meta["uid"].get<std::string>(),
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                          "[0-9a-f]{12}")));
  EXPECT_FALSE(meta.contains("managedFields"));
  EXPECT_EQ((*out)["apiVersion"], "v1");
  EXPECT_EQ((*out)["kind"], "ConfigMap");
  EXPECT_NE(NewUid(), NewUid());

  json with_rv = {{"metadata", {{"name", "x"}, {"resourceVersion", "5"}}}};
  EXPECT_EQ(PrepareCreate(cms, with_rv, "ml", kNow).status().code(), StatusCode::kInvalidArgument);
  json other_ns = {{"metadata", {{"name", "x"}, {"namespace", "prod"}}}};
  EXPECT_EQ(PrepareCreate(cms, other_ns, "ml", kNow).status().code(), StatusCode::kInvalidArgument);
  json wrong_kind = {{"kind", "Secret"}, {"metadata", {{"name", "x"}}}};
  EXPECT_EQ(PrepareCreate(cms, wrong_kind, "ml", kNow).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ApiserverObjectRulesTest, KindSpecificInitialState) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  Result<json> ns = PrepareCreate(Find(registry, "", "v1", "namespaces"),
                                  {{"metadata", {{"name", "ml"}, {"namespace", "x"}}}}, "", kNow);
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ((*ns)["spec"]["finalizers"], json::array({"kubernetes"}));
  EXPECT_EQ((*ns)["status"]["phase"], "Active");
  EXPECT_FALSE((*ns)["metadata"].contains("namespace"));

  json pod = {{"metadata", {{"name", "p"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"}, {"image", "sluice/rollout:0.1"}},
                  {{"name", "d"}, {"image", "busybox"}}}}}},
              {"status", {{"phase", "Running"}}}};
  Result<json> p = PrepareCreate(Find(registry, "", "v1", "pods"), pod, "ml", kNow);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["status"]["phase"], "Pending");
  EXPECT_EQ((*p)["spec"]["restartPolicy"], "Always");
  EXPECT_EQ((*p)["spec"]["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ((*p)["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ((*p)["spec"]["containers"][1]["imagePullPolicy"], "Always");
}

TEST(ApiserverObjectRulesTest, NamesFollowDnsRules) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& cms = Find(registry, "", "v1", "configmaps");
  const ResourceInfo& ns = Find(registry, "", "v1", "namespaces");
  EXPECT_TRUE(ValidateName(cms, {{"metadata", {{"name", "a.b-c"}}}}).empty());
  EXPECT_EQ(ValidateName(cms, {{"metadata", {{"name", "Bad_Name"}}}}).at(0).field, "metadata.name");
  EXPECT_FALSE(ValidateName(ns, {{"metadata", {{"name", "a.b"}}}}).empty());
  EXPECT_FALSE(ValidateName(cms, json::object()).empty());
  const ResourceInfo& crds =
      Find(registry, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
  json crd = {{"metadata", {{"name", "pools.example.com"}}},
              {"spec", {{"group", "example.com"}, {"names", {{"plural", "pools"}}}}}};
  EXPECT_TRUE(ValidateName(crds, crd).empty());
  crd["metadata"]["name"] = "other.example.com";
  EXPECT_FALSE(ValidateName(crds, crd).empty());
}

TEST(ApiserverObjectRulesTest, UpdateKeepsIdentityAndSplitsStatus) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& pods = Find(registry, "", "v1", "pods");
  const json current = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata",
                         {{"name", "p"},
                          {"namespace", "ml"},
                          {"uid", "u1"},
                          {"generation", 3},
                          {"resourceVersion", "10"},
                          {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
                        {"spec", {{"nodeName", ""}}},
                        {"status", {{"phase", "Running"}}}};
  json body = current;
  body["metadata"]["uid"] = "forged";
  body["metadata"]["labels"] = {{"a", "b"}};
  body["status"]["phase"] = "Failed";
  Result<json> same_spec = PrepareUpdate(pods, current, body, WriteTarget::kMain);
  ASSERT_TRUE(same_spec.ok());
  EXPECT_EQ((*same_spec)["metadata"]["uid"], "u1");
  EXPECT_EQ((*same_spec)["metadata"]["labels"]["a"], "b");
  EXPECT_EQ((*same_spec)["status"]["phase"], "Running");  // Status only via /status.
  EXPECT_EQ((*same_spec)["metadata"]["generation"], 3);   // Metadata changes keep generation.

  body["spec"]["nodeName"] = "n1";
  Result<json> new_spec = PrepareUpdate(pods, current, body, WriteTarget::kMain);
  ASSERT_TRUE(new_spec.ok());
  EXPECT_EQ((*new_spec)["metadata"]["generation"], 4);

  Result<json> status = PrepareUpdate(pods, current, body, WriteTarget::kStatus);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status)["status"]["phase"], "Failed");
  EXPECT_EQ((*status)["spec"]["nodeName"], "");
  EXPECT_FALSE((*status)["metadata"].contains("labels"));

  json renamed = current;
  renamed["metadata"]["name"] = "q";
  EXPECT_EQ(PrepareUpdate(pods, current, renamed, WriteTarget::kMain).status().code(),
            StatusCode::kInvalidArgument);

  json deleting = current;
  deleting["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z";
  deleting["metadata"]["finalizers"] = {"a"};
  json more = deleting;
  more["metadata"]["finalizers"] = {"a", "b"};
  EXPECT_EQ(PrepareUpdate(pods, deleting, more, WriteTarget::kMain).status().code(),
            StatusCode::kUnprocessable);
  json fewer = deleting;
  fewer["metadata"]["finalizers"] = json::array();
  Result<json> removed = PrepareUpdate(pods, deleting, fewer, WriteTarget::kMain);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ((*removed)["metadata"]["deletionTimestamp"], "2026-01-02T00:00:00Z");
}

TEST(ApiserverCustomResourceTest, PrunesDefaultsValidatesAndRunsRules) {
  const json crd = LoadCrd("rolloutpools.yaml");
  ASSERT_TRUE(ValidateCrdSpec(crd).empty());
  const std::string version = crd["spec"]["versions"][0]["name"];
  std::ifstream in(
      std::string(std::getenv("SLUICE_SOURCE_DIR") ? std::getenv("SLUICE_SOURCE_DIR") : ".") +
      "/examples/single-policy-grpo.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto docs = yaml::ParseDocuments(text.str());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  json pool;
  for (const json& d : *docs) {
    if (d.value("kind", "") == "RolloutPool") pool = d;
  }
  ASSERT_FALSE(pool.is_null());

  json valid = pool;
  CustomResourceCheck ok =
      CheckCustomResource(crd, version, valid, nullptr, FieldValidation::kStrict);
  EXPECT_TRUE(ok.decode_error.ok()) << ok.decode_error.ToString();
  EXPECT_TRUE(ok.errors.empty()) << openapi::Describe(ok.errors);
  EXPECT_TRUE(ok.skipped_rules.empty());

  json unknown = pool;
  unknown["spec"]["bogus"] = 1;
  CustomResourceCheck strict =
      CheckCustomResource(crd, version, unknown, nullptr, FieldValidation::kStrict);
  EXPECT_EQ(strict.decode_error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      strict.decode_error.message().find("strict decoding error: unknown field \"spec.bogus\""),
      std::string::npos)
      << strict.decode_error.message();
  json unknown2 = pool;
  unknown2["spec"]["bogus"] = 1;
  CustomResourceCheck warn =
      CheckCustomResource(crd, version, unknown2, nullptr, FieldValidation::kWarn);
  EXPECT_TRUE(warn.decode_error.ok());
  EXPECT_EQ(warn.warnings, std::vector<std::string>{"unknown field \"spec.bogus\""});
  EXPECT_FALSE(unknown2["spec"].contains("bogus"));

  json bad = pool;
  bad["spec"]["replicas"] = -3;
  CustomResourceCheck invalid =
      CheckCustomResource(crd, version, bad, nullptr, FieldValidation::kStrict);
  ASSERT_FALSE(invalid.errors.empty());
  EXPECT_EQ(invalid.errors[0].field, "spec.replicas");

  const json body =
      InvalidStatusJson("RolloutPool.sluice.dev", "p", "sluice.dev", "RolloutPool", invalid.errors);
  EXPECT_EQ(body["code"], 422);
  EXPECT_EQ(body["reason"], "Invalid");
  EXPECT_EQ(body["details"]["causes"][0]["field"], "spec.replicas");
  EXPECT_EQ(
      body["message"].get<std::string>().rfind("RolloutPool.sluice.dev \"p\" is invalid: ", 0), 0u);
}

TEST(ApiserverCustomResourceTest, CrdChecksAndAcceptedStatus) {
  json crd = LoadCrd("rolloutpools.yaml");
  json status = AcceptedCrdStatus(crd, json::object(), kNow);
  EXPECT_EQ(status["conditions"][1]["type"], "Established");
  EXPECT_EQ(status["conditions"][1]["status"], "True");
  EXPECT_EQ(status["acceptedNames"]["kind"], "RolloutPool");
  EXPECT_EQ(status["storedVersions"], json::array({crd["spec"]["versions"][0]["name"]}));
  // A later acceptance keeps the original transition time.
  json again = AcceptedCrdStatus(crd, status, kNow + std::chrono::hours(1));
  EXPECT_EQ(again["conditions"][0]["lastTransitionTime"], FormatTime(kNow));

  json two_storage = crd;
  json second = two_storage["spec"]["versions"][0];
  second["name"] = "v1beta1";
  two_storage["spec"]["versions"].push_back(second);
  EXPECT_FALSE(ValidateCrdSpec(two_storage).empty());
  json unstructural = crd;
  unstructural["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].erase(
      "type");
  EXPECT_FALSE(ValidateCrdSpec(unstructural).empty());
  EXPECT_FALSE(ParseFieldValidation("Loose").ok());
  EXPECT_EQ(ParseFieldValidation("").value(), FieldValidation::kWarn);
}

}  // namespace
}  // namespace sluice::apiserver

namespace sluice::apiserver {
namespace {

TEST(ApiserverObjectRulesTest, SecretStringDataIsMergedIntoDataAndNotStored) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo& secrets = Find(registry, "", "v1", "secrets");
  json secret = {{"metadata", {{"name", "creds"}}},
                 {"data", {{"user", "YWxpY2U="}, {"token", "b2xk"}}},
                 {"stringData", {{"token", "new"}, {"extra", "x"}}}};
  Result<json> created = PrepareCreate(secrets, secret, "ml", kNow);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(created->contains("stringData"));
  EXPECT_EQ((*created)["data"], (json{{"user", "YWxpY2U="}, {"token", "bmV3"}, {"extra", "eA=="}}));

  json update = *created;
  update["stringData"] = {{"user", "bob"}};
  Result<json> updated = PrepareUpdate(secrets, *created, update, WriteTarget::kMain);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_FALSE(updated->contains("stringData"));
  EXPECT_EQ((*updated)["data"]["user"], "Ym9i");
}

}  // namespace
}  // namespace sluice::apiserver
