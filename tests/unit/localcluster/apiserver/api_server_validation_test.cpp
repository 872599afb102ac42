// HTTP-level tests of custom resource admission in the local API server (api_server.h): schema
// and CEL validation naming the field, unknown fields (Strict, Warn, pruning) and defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "tests/unit/localcluster/apiserver/api_server_test_support.h"

namespace sluice::apiserver {
namespace {

using api_server_testing::ApiServerTest;
using api_server_testing::Body;
using api_server_testing::ExpectStatus;
using api_server_testing::kRolloutPools;
using api_server_testing::LoadYaml;
using api_server_testing::ReadFile;
using api_server_testing::RolloutPool;
using api_server_testing::SourceDir;
using nlohmann::json;

// ---- Schema validation, CEL, pruning and defaults ----------------------------------------

TEST_F(ApiServerTest, InvalidCustomResourcesAreRejectedNamingTheField) {
  StartServer();
  for (const char* crd :
       {"dataflows.yaml", "policies.yaml", "rolloutpools.yaml", "trainerjobs.yaml"}) {
    InstallCrd(crd);
  }
  const std::map<std::string, std::string> plurals = {{"RolloutPool", "rolloutpools"},
                                                      {"Policy", "policies"},
                                                      {"Dataflow", "dataflows"},
                                                      {"TrainerJob", "trainerjobs"}};
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() / "tests/data/manifests/invalid")) {
    std::istringstream lines(ReadFile(entry.path()));
    std::string line, field;
    while (std::getline(lines, line)) {
      if (line.rfind("# expect-field: ", 0) == 0) field = line.substr(16);
    }
    if (field.empty()) continue;
    const json manifest = LoadYaml(entry.path());
    const std::string kind = manifest.value("kind", "");
    ASSERT_TRUE(plurals.count(kind)) << entry.path();
    // Unknown fields are dropped with a warning under the default fieldValidation (Warn); kubectl
    // sends Strict, as here.
    const http::Response r = Post("/apis/sluice.dev/v1alpha1/namespaces/default/" +
                                      plurals.at(kind) + "?fieldValidation=Strict",
                                  manifest);
    const json body = Body(r);
    if (r.status == 400) {  // An unknown field under Strict.
      EXPECT_NE(body.value("message", "").find("strict decoding error"), std::string::npos)
          << entry.path() << ": " << r.body;
      EXPECT_NE(body.value("message", "").find(field), std::string::npos)
          << entry.path() << ": " << r.body;
      ++checked;
      continue;
    }
    ExpectStatus(r, 422, "Invalid");
    std::vector<std::string> fields;
    for (const json& cause : body.value("/details/causes"_json_pointer, json::array())) {
      fields.push_back(cause.value("field", ""));
    }
    EXPECT_NE(std::find(fields.begin(), fields.end(), field), fields.end())
        << entry.path().filename() << " expects " << field << ": " << r.body;
    EXPECT_EQ(body.value("/details/kind"_json_pointer, ""), kind) << r.body;
    EXPECT_EQ(body.value("/details/group"_json_pointer, ""), "sluice.dev") << r.body;
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

TEST_F(ApiServerTest, UnknownFieldsStrictRejectsWarnPrunesAndDefaultsApply) {
  StartServer();
  InstallCrd("rolloutpools.yaml");
  json pool = RolloutPool("strict");
  pool["spec"]["bogus"] = 1;

  http::Response r = Post(std::string(kRolloutPools) + "?fieldValidation=Strict", pool);
  ExpectStatus(r, 400, "BadRequest");
  EXPECT_NE(Body(r).value("message", "").find("strict decoding error"), std::string::npos)
      << r.body;
  EXPECT_NE(Body(r).value("message", "").find("unknown field \"spec.bogus\""), std::string::npos)
      << r.body;
  EXPECT_EQ(Get(std::string(kRolloutPools) + "/strict").status, 404);

  // The default (Warn): created, the field pruned, a Warning header (RFC 7234 quoted-string, as
  // kube writes it with Go's strconv.Quote) saying so.
  r = Post(kRolloutPools, pool);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Warning"), "299 - \"unknown field \\\"spec.bogus\\\"\"");
  json created = Body(r);
  EXPECT_FALSE(created.contains("/spec/bogus"_json_pointer)) << r.body;
  // Schema defaults are filled in.
  EXPECT_EQ(created.value("/spec/replicas"_json_pointer, -1), 1);
  EXPECT_EQ(created.value("/spec/engine/type"_json_pointer, ""), "builtin");
  EXPECT_EQ(created.value("/spec/engine/tensorParallelSize"_json_pointer, -1), 1);
  EXPECT_EQ(created.value("/spec/engine/maxBatchTokens"_json_pointer, -1), 8192);
  const json stored = Body(Get(std::string(kRolloutPools) + "/strict"));
  EXPECT_FALSE(stored.contains("/spec/bogus"_json_pointer));
  EXPECT_EQ(stored.value("/spec/engine/type"_json_pointer, ""), "builtin");

  // Ignore: pruned silently.
  json quiet = pool;
  quiet["metadata"]["name"] = "ignored";
  r = Post(std::string(kRolloutPools) + "?fieldValidation=Ignore", quiet);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Warning"), "");
  ExpectStatus(Post(std::string(kRolloutPools) + "?fieldValidation=Loud", quiet), 400,
               "BadRequest");
}

}  // namespace
}  // namespace sluice::apiserver
