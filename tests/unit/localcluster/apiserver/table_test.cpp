// JSONPath subset, human durations and Table output for printer columns.
#include "localcluster/apiserver/table.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/jsonpath.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using std::chrono::seconds;

TEST(ApiserverJsonPathTest, FieldsIndicesWildcardsAndQuotedKeys) {
  const json obj = json::parse(R"({"spec": {"replicas": 3, "regions": [{"name": "us"},
      {"name": "eu"}]}, "metadata": {"labels": {"app.kubernetes.io/name": "x"}}})");
  auto eval = [&](const char* path) { return EvalJsonPath(path, obj).value(); };
  EXPECT_EQ(eval(".spec.replicas"), std::vector<json>{3});
  EXPECT_EQ(eval("{.spec.replicas}"), std::vector<json>{3});
  EXPECT_EQ(eval(".spec.regions[1].name"), std::vector<json>{"eu"});
  EXPECT_EQ(eval(".spec.regions[*].name"), (std::vector<json>{"us", "eu"}));
  EXPECT_EQ(eval(".metadata.labels['app.kubernetes.io/name']"), std::vector<json>{"x"});
  EXPECT_TRUE(eval(".spec.missing.deeper").empty());
  EXPECT_TRUE(eval(".spec.regions[5].name").empty());
  EXPECT_EQ(eval(".").size(), 1u);
  for (const char* bad : {"spec.replicas", ".spec..x", ".spec[", ".spec[?(@.x)]", ".a[1:2]"}) {
    EXPECT_FALSE(EvalJsonPath(bad, obj).ok()) << bad;
  }
}

TEST(ApiserverTableTest, HumanDurationMatchesKubectl) {
  const std::pair<int64_t, std::string> cases[] = {
      {-5, "<invalid>"},
      {-1, "0s"},
      {0, "0s"},
      {45, "45s"},
      {119, "119s"},
      {120, "2m"},
      {330, "5m30s"},
      {600, "10m"},
      {3 * 3600, "3h"},
      {3 * 3600 + 600, "3h10m"},
      {20 * 3600, "20h"},
      {50 * 3600, "2d2h"},
      {9 * 86400, "9d"},
      {800 * 86400, "2y70d"},
      {3000 * 86400, "8y"},
  };
  for (const auto& [secs, text] : cases) {
    EXPECT_EQ(HumanDuration(seconds(secs)), text) << secs;
  }
}

json LoadCrd(const char* file) {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  std::ifstream in((dir ? std::filesystem::path(dir) : std::filesystem::current_path()) / "crds" /
                   file);
  std::ostringstream text;
  text << in.rdbuf();
  return yaml::ParseDocuments(text.str()).value().at(0);
}

TEST(ApiserverTableTest, RolloutPoolColumnsFromTheCrd) {
  const std::vector<PrinterColumn> columns =
      PrinterColumnsFor(LoadCrd("rolloutpools.yaml"), "v1alpha1");
  std::vector<std::string> names;
  for (const PrinterColumn& c : columns) names.push_back(c.name);
  EXPECT_EQ(names.front(), "Name");
  EXPECT_EQ(names.back(), "Age");
  EXPECT_NE(std::find(names.begin(), names.end(), "Desired"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "Up-to-date"), names.end());
  // No column reads a list with [*]: a real API server would show only its first item.
  for (const PrinterColumn& c : columns) {
    EXPECT_EQ(c.json_path.find("[*]"), std::string::npos) << c.name << ": " << c.json_path;
  }

  const json pool = json::parse(R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
      "metadata": {"name": "rp", "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"replicas": 3, "policies": ["solver", "verifier"],
               "placement": {"regions": [{"name": "us-east"}, {"name": "eu-west"}]}},
      "status": {"readyReplicas": 2, "updatedReplicas": 1}})");
  FakeClock clock;  // 2026-01-01T00:00:00Z.
  clock.Advance(std::chrono::hours(50));
  Result<json> table = BuildTable(columns, {pool}, clock.WallNow(), "42");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ((*table)["kind"], "Table");
  EXPECT_EQ((*table)["metadata"]["resourceVersion"], "42");
  const json& cells = (*table)["rows"][0]["cells"];
  auto cell = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return cells[i];
    }
    return json("missing column " + name);
  };
  EXPECT_EQ(cell("Name"), "rp");
  EXPECT_EQ(cell("Desired"), 3);
  EXPECT_EQ(cell("Ready"), 2);
  EXPECT_EQ(cell("Up-to-date"), 1);
  EXPECT_EQ(cell("Policies"), R"(["solver","verifier"])");
  EXPECT_EQ(cell("Age"), "2d2h");
  EXPECT_EQ((*table)["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ((*table)["rows"][0]["object"]["metadata"]["namespace"], "ml");
}

// kube-apiserver's table convertor prints results[0][0]: the first value a column's JSONPath
// selects, never several joined (k8s.io/apiextensions-apiserver
// pkg/registry/customresource/tableconvertor).
TEST(ApiserverTableTest, AColumnShowsOnlyTheFirstValueItsPathSelects) {
  struct Case {
    const char* name;
    const char* type;
    const char* json_path;
    json want;
  };
  const Case cases[] = {
      {"string over [*]", "string", ".spec.regions[*].name", "us-east"},
      {"integer over [*]", "integer", ".spec.regions[*].weight", 3},
      {"string of a list", "string", ".spec.policies", R"(["solver","verifier"])"},
      {"string of an object", "string", ".spec.regions[1]", R"({"name":"eu-west","weight":1})"},
      {"string of a number", "string", ".spec.regions[0].weight", "3"},
      {"[*] over an empty list", "string", ".spec.none[*].name", nullptr},
      {"missing field", "integer", ".status.replicas", nullptr},
  };
  const json object = json::parse(R"({"metadata": {"name": "rp"},
      "spec": {"policies": ["solver", "verifier"], "none": [],
               "regions": [{"name": "us-east", "weight": 3}, {"name": "eu-west", "weight": 1}]}})");
  FakeClock clock;
  for (const Case& c : cases) {
    const std::vector<PrinterColumn> columns = {{"Name", "string", "name", "", "", 0},
                                                {c.name, c.type, "", "", c.json_path, 0}};
    Result<json> table = BuildTable(columns, {object}, clock.WallNow(), "1");
    ASSERT_TRUE(table.ok()) << c.name << ": " << table.status().ToString();
    EXPECT_EQ((*table)["rows"][0]["cells"][1], c.want) << c.name;
  }
}

TEST(ApiserverTableTest, DefaultColumnsMissingValuesAndIncludeObject) {
  const json crd = json::parse(R"({"spec": {"versions": [{"name": "v1"}]}})");
  const std::vector<PrinterColumn> columns = PrinterColumnsFor(crd, "v1");
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[1].name, "Age");
  const json obj = {{"metadata", {{"name", "x"}}}};
  FakeClock clock;
  Result<json> table = BuildTable(columns, {obj}, clock.WallNow(), "1", IncludeObject::kNone);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)["rows"][0]["cells"], json::array({"x", nullptr}));
  EXPECT_FALSE((*table)["rows"][0].contains("object"));
  table = BuildTable(columns, {obj}, clock.WallNow(), "1", IncludeObject::kObject);
  EXPECT_EQ((*table)["rows"][0]["object"], obj);

  std::vector<PrinterColumn> bad = columns;
  bad.push_back({"Broken", "string", "", "", ".spec[?(@.x)]", 0});
  Result<json> failed = BuildTable(bad, {obj}, clock.WallNow(), "1");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("printer column \"Broken\""), std::string::npos);
}

}  // namespace
}  // namespace sluice::apiserver
