// Table-driven tests over the manifests in tests/data/manifests and examples/: valid ones pass
// defaulting, the structural schema and the CEL rules of crds/*.yaml; each invalid one fails
// with the field and message its header names:
//   # expect-field: spec.autoscaling.minReplicas
//   # expect-message: should be greater than or equal to 0
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/crds/crds.h"
#include "api/validation.h"
#include "common/openapi/schema.h"
#include "common/yaml/yaml_json.h"
#include "tests/unit/api/test_files.h"

namespace sluice::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_files::ReadFile;
using testing_files::SourceDir;

std::vector<fs::path> YamlFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<json> Documents(const fs::path& path) {
  Result<std::vector<json>> docs = yaml::ParseDocuments(ReadFile(path));
  EXPECT_TRUE(docs.ok()) << path << ": " << docs.status().ToString();
  return docs.ok() ? *docs : std::vector<json>{};
}

// The value of "# key: value" in the file's leading comments.
std::string Header(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::string prefix = "# " + key + ":";
    if (line.rfind(prefix, 0) == 0) {
      std::string v = line.substr(prefix.size());
      const size_t first = v.find_first_not_of(' ');
      return first == std::string::npos ? "" : v.substr(first);
    }
  }
  return "";
}

TEST(ApiCrdsTest, EveryCrdIsAValidStructuralSchema) {
  ASSERT_EQ(Kinds().size(), 4u);
  for (const ResourceKind& k : Kinds()) {
    const openapi::FieldErrors errors = openapi::CheckStructural(k.schema);
    EXPECT_TRUE(errors.empty()) << k.file << ":\n" << openapi::Describe(errors);
  }
  for (const char* kind : {"Policy", "RolloutPool", "Dataflow", "TrainerJob"}) {
    EXPECT_NE(FindKind(kind), nullptr) << kind;
  }
}

TEST(ApiCrdsTest, EveryNodeHasADescription) {
  for (const ResourceKind& k : Kinds()) {
    std::vector<std::string> missing;
    std::function<void(const json&, const std::string&)> walk = [&](const json& node,
                                                                    const std::string& path) {
      // The root's metadata is the exception: kube-apiserver refuses a CRD whose schema says
      // anything there but type and name/generateName ("metadata is implicitly specified").
      if (path == "metadata") {
        EXPECT_FALSE(node.contains("description")) << k.file;
        return;
      }
      if (!node.contains("description")) missing.push_back(path.empty() ? "<root>" : path);
      if (auto p = node.find("properties"); p != node.end()) {
        for (auto it = p->begin(); it != p->end(); ++it)
          walk(*it, openapi::JoinPath(path, it.key()));
      }
      if (auto items = node.find("items"); items != node.end() && items->is_object()) {
        walk(*items, path + "[]");
      }
      if (auto a = node.find("additionalProperties"); a != node.end() && a->is_object()) {
        walk(*a, path + "{}");
      }
    };
    walk(k.schema, "");
    EXPECT_TRUE(missing.empty()) << k.file << " lacks descriptions at:\n"
                                 << testing::PrintToString(missing);
  }
}

TEST(ApiManifestsTest, ValidManifestsPass) {
  const std::vector<fs::path> files = YamlFiles(SourceDir() / "tests/data/manifests/valid");
  ASSERT_GE(files.size(), 8u);
  for (const fs::path& file : files) {
    for (json object : Documents(file)) {
      ASSERT_TRUE(DefaultObject(object).ok()) << file;
      const ValidationReport report = ValidateObject(object);
      EXPECT_TRUE(report.ok()) << file << ":\n" << openapi::Describe(report.errors);
      EXPECT_TRUE(report.skipped_rules.empty())
          << file << ": " << testing::PrintToString(report.skipped_rules);
    }
  }
}

TEST(ApiManifestsTest, InvalidManifestsFailWithTheExpectedFieldAndMessage) {
  const std::vector<fs::path> files = YamlFiles(SourceDir() / "tests/data/manifests/invalid");
  ASSERT_GE(files.size(), 25u);
  for (const fs::path& file : files) {
    const std::string text = ReadFile(file);
    const std::string field = Header(text, "expect-field");
    const std::string message = Header(text, "expect-message");
    ASSERT_FALSE(message.empty()) << file << " has no '# expect-message:' header";
    std::vector<json> docs = Documents(file);
    ASSERT_EQ(docs.size(), 1u) << file;
    json object = docs[0];
    (void)DefaultObject(object);  // Unknown kinds fail here and again, clearly, below.
    const ValidationReport report = ValidateObject(object);
    EXPECT_TRUE(report.skipped_rules.empty())
        << file << ": " << testing::PrintToString(report.skipped_rules);
    bool found = false;
    for (const openapi::FieldError& e : report.errors) {
      found = found || (e.field == field && e.message.find(message) != std::string::npos);
    }
    EXPECT_TRUE(found) << file.filename() << ": expected " << field << ": ..." << message
                       << "...\n got:\n"
                       << openapi::Describe(report.errors);
  }
}

TEST(ApiManifestsTest, EveryExampleValidates) {
  const std::vector<fs::path> files = YamlFiles(SourceDir() / "examples");
  ASSERT_GE(files.size(), 4u);
  for (const fs::path& file : files) {
    // The local cluster's node list (sluice-node --cluster-config), not a Kubernetes manifest.
    if (file.filename() == "local-cluster.yaml") continue;
    int sluice_objects = 0;
    for (json object : Documents(file)) {
      if (object.value("apiVersion", "") != "sluice.dev/v1alpha1") continue;  // Core objects.
      ++sluice_objects;
      const Status s = DefaultAndValidate(object);
      EXPECT_TRUE(s.ok()) << file.filename() << ": " << s.ToString();
    }
    EXPECT_GT(sluice_objects, 0) << file;
  }
}

TEST(ApiManifestsTest, DefaultingFillsSchemaDefaultsAndIsIdempotent) {
  json pool = json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
    "metadata": {"name": "rp"},
    "spec": {"policies": ["p"], "dataflowRef": {"name": "df"}}})");
  ASSERT_TRUE(DefaultObject(pool).ok());
  EXPECT_EQ(pool["spec"]["engine"]["type"], "builtin");
  EXPECT_TRUE(pool["spec"]["engine"].contains("maxBatchTokens"));
  json again = pool;
  ASSERT_TRUE(DefaultObject(again).ok());
  EXPECT_EQ(again, pool);
  EXPECT_TRUE(ValidateObject(pool).ok()) << openapi::Describe(ValidateObject(pool).errors);
}

TEST(ApiManifestsTest, UnknownKindsAndVersionsAreRejectedByName) {
  json obj = {{"apiVersion", "sluice.dev/v1"}, {"kind", "Policy"}, {"metadata", {{"name", "x"}}}};
  Status s = DefaultAndValidate(obj);
  EXPECT_EQ(s.field(), "apiVersion");
  EXPECT_NE(s.message().find("Unsupported value: \"sluice.dev/v1\""), std::string::npos);
  obj = {
      {"apiVersion", "sluice.dev/v1alpha1"}, {"kind", "Policies"}, {"metadata", {{"name", "x"}}}};
  s = DefaultAndValidate(obj);
  EXPECT_EQ(s.field(), "kind");
  EXPECT_NE(s.message().find("\"RolloutPool\""), std::string::npos) << s.message();
}

TEST(ApiManifestsTest, MetadataNameIsRequiredAndChecked) {
  json obj = {{"apiVersion", "sluice.dev/v1alpha1"},
              {"kind", "Policy"},
              {"metadata", json::object()},
              {"spec", json::object()}};
  (void)DefaultObject(obj);
  ValidationReport report = ValidateObject(obj);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.errors[0].field, "metadata.name");
  obj["metadata"]["name"] = "Bad_Name";
  report = ValidateObject(obj);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors[0].message.find("RFC 1123"), std::string::npos);
}

}  // namespace
}  // namespace sluice::api
