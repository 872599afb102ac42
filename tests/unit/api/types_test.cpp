// The generated API types: in sync with the CRDs, and an exact JSON round trip of every valid
// manifest once defaulted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/crds/codegen.h"
#include "api/crds/crds.h"
#include "api/generated/dataflow_types.h"
#include "api/generated/policy_types.h"
#include "api/generated/rollout_pool_types.h"
#include "api/generated/trainer_job_types.h"
#include "api/validation.h"
#include "common/yaml/yaml_json.h"
#include "tests/unit/api/test_files.h"

namespace sluice::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_files::ReadFile;
using testing_files::SourceDir;

TEST(ApiCodegenTest, GeneratedTypesMatchTheCrds) {
  for (const ResourceKind& kind : Kinds()) {
    const GeneratedTypes types = GenerateTypes(kind);
    const fs::path dir = SourceDir() / "api/generated";
    EXPECT_EQ(ReadFile(dir / (types.file_stem + ".h")), types.header)
        << types.file_stem << ".h is stale: run build/bin/sluice-crd-codegen";
    EXPECT_EQ(ReadFile(dir / (types.file_stem + ".cpp")), types.source)
        << types.file_stem << ".cpp is stale: run build/bin/sluice-crd-codegen";
  }
}

// Typed round trip through the generated struct for `kind`.
Result<json> RoundTrip(const json& object) {
  const std::string kind = object.value("kind", "");
  auto through = [&](auto parsed) -> Result<json> {
    if (!parsed.ok()) return parsed.status();
    return ToJson(*parsed);
  };
  if (kind == "Policy") return through(PolicyFromJson(object));
  if (kind == "RolloutPool") return through(RolloutPoolFromJson(object));
  if (kind == "Dataflow") return through(DataflowFromJson(object));
  if (kind == "TrainerJob") return through(TrainerJobFromJson(object));
  return Status::InvalidArgument("unknown kind " + kind);
}

TEST(ApiTypesTest, DefaultedManifestsRoundTripExactly) {
  int checked = 0;
  for (const char* dir : {"tests/data/manifests/valid", "examples"}) {
    for (const auto& entry : fs::directory_iterator(SourceDir() / dir)) {
      if (entry.path().extension() != ".yaml") continue;
      Result<std::vector<json>> docs = yaml::ParseDocuments(ReadFile(entry.path()));
      ASSERT_TRUE(docs.ok()) << entry.path();
      for (json object : *docs) {
        if (object.value("apiVersion", "") != "sluice.dev/v1alpha1") continue;
        ASSERT_TRUE(DefaultObject(object).ok());
        Result<json> back = RoundTrip(object);
        ASSERT_TRUE(back.ok()) << entry.path() << ": " << back.status().ToString();
        EXPECT_EQ(*back, object) << entry.path() << "\nwant: " << object.dump(2)
                                 << "\ngot:  " << back->dump(2);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(ApiTypesTest, CppDefaultsEqualSchemaDefaults) {
  // A RolloutPool built in C++ with only its required fields matches one defaulted from JSON.
  json minimal = json::parse(R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
      "metadata": {"name": "rp"}, "spec": {"policies": ["p"], "dataflowRef": {"name": "df"}}})");
  ASSERT_TRUE(DefaultObject(minimal).ok());
  Result<RolloutPool> parsed = RolloutPoolFromJson(minimal);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  RolloutPoolSpecEngine engine;  // C++ initialisers come from the same schema defaults.
  EXPECT_EQ(parsed->spec.engine.max_batch_tokens, engine.max_batch_tokens);
  EXPECT_EQ(parsed->spec.engine.kv_cache_fraction, engine.kv_cache_fraction);
  EXPECT_EQ(parsed->spec.engine.type, engine.type);
  EXPECT_EQ(parsed->spec.policies, std::vector<std::string>{"p"});
}

TEST(ApiTypesTest, TypeMismatchNamesTheField) {
  json bad = json::parse(R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
      "metadata": {"name": "rp"}, "spec": {"policies": [7], "dataflowRef": {"name": "df"}}})");
  Result<RolloutPool> parsed = RolloutPoolFromJson(bad);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().field(), "spec.policies[0]");
  EXPECT_EQ(parsed.status().message(), "must be of type string");
}

}  // namespace
}  // namespace sluice::api
