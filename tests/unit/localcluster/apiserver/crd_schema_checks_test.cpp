// The CRD checks that make the local API server refuse what kube-apiserver 1.30 refuses
// (crd_schema_checks.h, ValidateCrdSpec): the root metadata invariant, defaults against their own
// CEL rules, and schema or rule fields 1.30 does not know. Each case quotes the field path and
// message kube-apiserver gives (k8s.io/apiextensions-apiserver at v0.30: pkg/apiserver/schema/
// validation.go, pkg/apiserver/schema/defaulting/validation.go, pkg/apiserver/schema/cel/
// validation.go; strict decoding paths from sigs.k8s.io/json).
#include "localcluster/apiserver/crd_schema_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/custom_resources.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using openapi::FieldErrors;

constexpr char kSchemaPath[] = "spec.versions[0].schema.openAPIV3Schema";

// crds/<file>, its first document as JSON.
json LoadSluiceCrd(const std::string& file) {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  std::ifstream in((dir ? std::filesystem::path(dir) : std::filesystem::current_path()) / "crds" /
                   file);
  std::ostringstream text;
  text << in.rdbuf();
  Result<std::vector<json>> docs = yaml::ParseDocuments(text.str());
  if (!docs.ok() || docs->empty()) {
    ADD_FAILURE() << "cannot read crds/" << file;
    return json::object();
  }
  return docs->front();
}

// A CRD (widgets.example.dev, one version v1) whose openAPIV3Schema is `schema` (JSON text).
json CrdWithSchema(const std::string& schema) {
  json version = {{"name", "v1"}, {"served", true}, {"storage", true}};
  version["schema"]["openAPIV3Schema"] = json::parse(schema);
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"}, {"kind", "CustomResourceDefinition"}};
  crd["metadata"]["name"] = "widgets.example.dev";
  crd["spec"] = {{"group", "example.dev"}, {"scope", "Namespaced"}};
  crd["spec"]["names"] = {{"plural", "widgets"},
                          {"singular", "widget"},
                          {"kind", "Widget"},
                          {"listKind", "WidgetList"}};
  crd["spec"]["versions"] = json::array();
  crd["spec"]["versions"].push_back(std::move(version));
  return crd;
}

// A schema whose spec has the one property `name` with schema `property` (JSON text).
std::string SpecWith(const std::string& name, const std::string& property) {
  return R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {")" + name +
         R"(": )" + property + "}}}}";
}

std::string At(const std::string& relative) { return std::string(kSchemaPath) + "." + relative; }

constexpr char kImplicitMetadata[] =
    "Forbidden: must not specify anything other than name and generateName, but metadata is "
    "implicitly specified";

TEST(CrdSchemaChecksTest, RootMetadataMayRestrictOnlyNameAndGenerateName) {
  struct Case {
    const char* name;
    const char* metadata;  // The schema of the root's metadata property.
    FieldErrors expected;
  };
  const Case cases[] = {
      {"a description",
       R"({"type": "object", "description": "Standard object metadata."})",
       {{At("properties[metadata]"), kImplicitMetadata}}},
      {"labels",
       R"({"type": "object", "properties": {"labels": {"type": "object",
           "additionalProperties": {"type": "string"}}}})",
       {{At("properties[metadata]"), kImplicitMetadata}}},
      {"a CEL rule",
       R"({"type": "object", "x-kubernetes-validations": [
           {"rule": "self.name.size() <= 20"}]})",
       {{At("properties[metadata]"), kImplicitMetadata}}},
      {"not an object",
       R"({"type": "string"})",
       {{At("properties[metadata].type"), "Invalid value: \"string\": must be object"}}},
      {"a default for name",
       R"({"type": "object", "properties": {"name": {"type": "string",
           "default": "w"}}})",
       {{At("properties[metadata].properties[name].default"),
         "Forbidden: must not be set in top-level metadata"}}},
      {"only type", R"({"type": "object"})", {}},
      {"name and generateName",
       R"({"type": "object", "properties": {
           "name": {"type": "string", "maxLength": 20}, "generateName": {"type": "string"}}})",
       {}},
  };
  for (const Case& c : cases) {
    const json crd = CrdWithSchema(R"({"type": "object", "properties": {"metadata": )" +
                                   std::string(c.metadata) + "}}");
    EXPECT_EQ(ValidateCrdSpec(crd), c.expected) << c.name;
  }
}

TEST(CrdSchemaChecksTest, DefaultsMustPassTheirOwnRulesAsGiven) {
  struct Case {
    const char* name;
    std::string schema;
    FieldErrors expected;
  };
  const std::string batch_default = At("properties[spec].properties[batch].default");
  const Case cases[] = {
      {"a rule reading fields only nested defaults fill",
       SpecWith("batch", R"({"type": "object", "default": {},
           "properties": {"minibatches": {"type": "integer", "default": 1},
                          "groupsPerBatch": {"type": "integer", "default": 32}},
           "x-kubernetes-validations": [{"rule": "self.minibatches <= self.groupsPerBatch",
               "message": "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch",
               "fieldPath": ".minibatches"}]})"),
       {{batch_default,
         "Invalid value: \"object\": no such key: minibatches evaluating rule: "
         "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch"}}},
      {"the same rule guarded with has()",
       SpecWith("batch", R"({"type": "object", "default": {},
           "properties": {"minibatches": {"type": "integer", "default": 1},
                          "groupsPerBatch": {"type": "integer", "default": 32}},
           "x-kubernetes-validations": [{"rule": "!has(self.minibatches) || !has(self.groupsPerBatch) || self.minibatches <= self.groupsPerBatch",
               "message": "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch",
               "fieldPath": ".minibatches"}]})"),
       {}},
      {"a default the rule rejects, reported at its fieldPath",
       SpecWith("batch", R"({"type": "object", "default": {"minibatches": 64, "groupsPerBatch": 32},
           "properties": {"minibatches": {"type": "integer"}, "groupsPerBatch": {"type": "integer"}},
           "x-kubernetes-validations": [{"rule": "self.minibatches <= self.groupsPerBatch",
               "message": "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch",
               "fieldPath": ".minibatches"}]})"),
       {{batch_default + ".minibatches",
         "Invalid value: \"object\": spec.batch.minibatches must not exceed "
         "spec.batch.groupsPerBatch"}}},
      {"a rule without a message",
       SpecWith("limits", R"({"type": "object", "default": {"n": 0},
           "properties": {"n": {"type": "integer"}},
           "x-kubernetes-validations": [{"rule": "self.n > 0"}]})"),
       {{At("properties[spec].properties[limits].default"),
         "Invalid value: \"object\": failed rule: self.n > 0"}}},
      {"a rule with a reason",
       SpecWith("limits", R"js({"type": "object", "default": {"cap": 1},
           "properties": {"cap": {"type": "integer"}},
           "x-kubernetes-validations": [{"rule": "!has(self.cap)", "message": "cap is not allowed",
               "reason": "FieldValueForbidden"}]})js"),
       {{At("properties[spec].properties[limits].default"), "Forbidden: cap is not allowed"}}},
      {"a rule of a descendant the default contains",
       SpecWith("outer", R"({"type": "object", "default": {"inner": {}},
           "properties": {"inner": {"type": "object", "properties": {"x": {"type": "integer"}},
               "x-kubernetes-validations": [{"rule": "self.x > 0",
                   "message": "x must be positive"}]}}})"),
       {{At("properties[spec].properties[outer].default.inner"),
         "Invalid value: \"object\": no such key: x evaluating rule: x must be positive"}}},
      {"a rule of list items",
       SpecWith("list", R"({"type": "array", "default": [{}],
           "items": {"type": "object", "properties": {"name": {"type": "string"}},
               "x-kubernetes-validations": [{"rule": "self.name != ''",
                   "message": "name must not be empty"}]}})"),
       {{At("properties[spec].properties[list].default[0]"),
         "Invalid value: \"object\": no such key: name evaluating rule: name must not be "
         "empty"}}},
      {"an error absorbed by ||, as CEL does",
       SpecWith("sync", R"js({"type": "object", "default": {},
           "properties": {"mode": {"type": "string", "default": "full"},
                          "every": {"type": "integer"}},
           "x-kubernetes-validations": [{"rule": "self.mode == 'delta' || !has(self.every)",
               "message": "every is only valid in delta mode"}]})js"),
       {}},
      {"a transition rule, oldSelf being the default",
       SpecWith("t", R"({"type": "object", "default": {"x": 1},
           "properties": {"x": {"type": "integer"}},
           "x-kubernetes-validations": [{"rule": "oldSelf.x < self.x"}]})"),
       {{At("properties[spec].properties[t].default"),
         "Invalid value: \"object\": failed rule: oldSelf.x < self.x"}}},
      {"a default failing its schema: only the schema error, rules are not run",
       SpecWith("n", R"({"type": "integer", "minimum": 1, "default": 0,
           "x-kubernetes-validations": [{"rule": "self > 5"}]})"),
       {{At("properties[spec].properties[n].default"),
         "Invalid value: 0: should be greater than or equal to 1"}}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    EXPECT_EQ(ValidateCrdSpec(CrdWithSchema(c.schema), &skipped), c.expected) << c.name;
    EXPECT_TRUE(skipped.empty()) << c.name << ": " << testing::PrintToString(skipped);
  }
}

// Each rule of crds/*.yaml that kube-apiserver refused on `default: {}`, as it was, gives kube's
// error again; the has()-guarded rules in the files pass.
TEST(CrdSchemaChecksTest, TheFormerSluiceRulesFailOnTheirDefaultsAsKubeReported) {
  struct Case {
    const char* file;
    const char* rule_pointer;  // Below openAPIV3Schema.
    const char* former_rule;
    const char* field;  // Below openAPIV3Schema.
    const char* message;
  };
  const Case cases[] = {
      {"dataflows.yaml", "/properties/spec/properties/sampling/x-kubernetes-validations/0/rule",
       "self.groupSize == 1 || self.temperature > 0.0",
       "properties[spec].properties[sampling].default",
       "Invalid value: \"object\": no such key: groupSize evaluating rule: "
       "spec.sampling.temperature must be greater than 0 when spec.sampling.groupSize is greater "
       "than 1"},
      {"dataflows.yaml", "/properties/spec/properties/batch/x-kubernetes-validations/0/rule",
       "self.minibatches <= self.groupsPerBatch", "properties[spec].properties[batch].default",
       "Invalid value: \"object\": no such key: minibatches evaluating rule: "
       "spec.batch.minibatches must not exceed spec.batch.groupsPerBatch"},
      {"policies.yaml", "/properties/spec/properties/weightSync/x-kubernetes-validations/1/rule",
       "self.mode != 'delta' || self.keepVersions >= 2",
       "properties[spec].properties[weightSync].default",
       "Invalid value: \"object\": no such key: mode evaluating rule: "
       "spec.weightSync.keepVersions must be at least 2 when spec.weightSync.mode is delta"},
      {"trainerjobs.yaml", "/properties/spec/properties/algorithm/x-kubernetes-validations/0/rule",
       "self.clipLow < self.clipHigh", "properties[spec].properties[algorithm].default",
       "Invalid value: \"object\": no such key: clipLow evaluating rule: "
       "spec.algorithm.clipLow must be less than spec.algorithm.clipHigh"},
      {"trainerjobs.yaml", "/properties/spec/properties/algorithm/x-kubernetes-validations/3/rule",
       "self.type != 'dapo' || self.lossAggregation == 'token-mean'",
       "properties[spec].properties[algorithm].default",
       "Invalid value: \"object\": no such key: type evaluating rule: "
       "spec.algorithm.lossAggregation must be token-mean when spec.algorithm.type is dapo"},
      {"trainerjobs.yaml",
       "/properties/spec/properties/algorithm/properties/importanceCorrection/"
       "x-kubernetes-validations/0/rule",
       "self.type != 'tis' || (has(self.cap) && self.cap > 0.0)",
       "properties[spec].properties[algorithm].properties[importanceCorrection].default",
       "Invalid value: \"object\": no such key: type evaluating rule: "
       "spec.algorithm.importanceCorrection.cap must be set and greater than 0 when "
       "spec.algorithm.importanceCorrection.type is tis"},
  };
  for (const Case& c : cases) {
    json crd = LoadSluiceCrd(c.file);
    const json::json_pointer rule(std::string("/spec/versions/0/schema/openAPIV3Schema") +
                                  c.rule_pointer);
    ASSERT_TRUE(crd.contains(rule)) << c.file << " " << c.rule_pointer;
    crd[rule] = c.former_rule;
    EXPECT_EQ(ValidateCrdSpec(crd), (FieldErrors{{At(c.field), c.message}}))
        << c.file << ": " << c.former_rule;
  }
  // And the description the root metadata used to carry.
  json crd = LoadSluiceCrd("dataflows.yaml");
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["description"] =
      "Standard object metadata (name, namespace, labels, annotations).";
  EXPECT_EQ(ValidateCrdSpec(crd), (FieldErrors{{At("properties[metadata]"), kImplicitMetadata}}));
}

TEST(CrdSchemaChecksTest, UnknownSchemaAndRuleFieldsAreThoseKube130DoesNotKnow) {
  struct Case {
    const char* name;
    std::string schema;
    std::vector<std::string> unknown;  // Paths as kube's strict decoding prints them.
  };
  const std::string root = kSchemaPath;
  const Case cases[] = {
      {"every rule field 1.30 knows",
       SpecWith("n", R"({"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0",
           "message": "m", "messageExpression": "'m'", "reason": "FieldValueInvalid",
           "fieldPath": ".x", "optionalOldSelf": false}]})"),
       {}},
      {"an unknown rule field",
       R"({"type": "object", "properties": {"spec": {"type": "object",
           "x-kubernetes-validations": [{"rule": "true", "foo": 1}]}}})",
       {root + ".properties.spec.x-kubernetes-validations[0].foo"}},
      {"a misspelt keyword",
       SpecWith("name", R"({"type": "string", "maxlength": 3})"),
       {root + ".properties.spec.properties.name.maxlength"}},
      {"an unknown extension at the root",
       R"({"type": "object", "x-kubernetes-foo": true})",
       {root + ".x-kubernetes-foo"}},
      {"inside items",
       SpecWith("tags", R"({"type": "array", "items": {"type": "string",
           "x-kubernetes-validations": [{"rule": "self != ''", "severity": "high"}]}})"),
       {root + ".properties.spec.properties.tags.items.x-kubernetes-validations[0].severity"}},
      {"inside externalDocs",
       SpecWith("n", R"({"type": "integer", "externalDocs": {"url": "u", "title": "t"}})"),
       {root + ".properties.spec.properties.n.externalDocs.title"}},
  };
  for (const Case& c : cases) {
    json crd = CrdWithSchema(c.schema);
    EXPECT_EQ(PruneUnknownSchemaFields(crd), c.unknown) << c.name;
    EXPECT_TRUE(PruneUnknownSchemaFields(crd).empty()) << c.name << ": pruned in place";
  }
}

TEST(CrdSchemaChecksTest, UnknownFieldsStrictRefusesWarnAndIgnorePrune) {
  const json crd = CrdWithSchema(R"({"type": "object", "properties": {"spec": {"type": "object",
      "x-kubernetes-validations": [{"rule": "true", "foo": 1}]}}})");
  const std::string path =
      std::string(kSchemaPath) + ".properties.spec.x-kubernetes-validations[0].foo";

  json strict = crd;
  CrdDecodeCheck refused = DecodeCrdSchemas(strict, FieldValidation::kStrict);
  EXPECT_EQ(refused.decode_error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.decode_error.message(),
            "CustomResourceDefinition in version \"v1\" cannot be handled as a "
            "CustomResourceDefinition: strict decoding error: unknown field \"" +
                path + "\"");
  EXPECT_EQ(strict, crd);

  json warn = crd;
  CrdDecodeCheck warned = DecodeCrdSchemas(warn, FieldValidation::kWarn);
  EXPECT_TRUE(warned.decode_error.ok());
  EXPECT_EQ(warned.warnings, std::vector<std::string>{"unknown field \"" + path + "\""});
  EXPECT_FALSE(warn.contains(
      "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/0/foo"_json_pointer));

  json ignore = crd;
  CrdDecodeCheck ignored = DecodeCrdSchemas(ignore, FieldValidation::kIgnore);
  EXPECT_TRUE(ignored.decode_error.ok());
  EXPECT_TRUE(ignored.warnings.empty());
  EXPECT_EQ(ignore, warn);
}

TEST(CrdSchemaChecksTest, EverySluiceCrdPassesWhatKube130Checks) {
  for (const char* file :
       {"dataflows.yaml", "policies.yaml", "rolloutpools.yaml", "trainerjobs.yaml"}) {
    json crd = LoadSluiceCrd(file);
    std::vector<std::string> skipped;
    EXPECT_EQ(ValidateCrdSpec(crd, &skipped), FieldErrors{}) << file;
    EXPECT_TRUE(skipped.empty()) << file << ": " << testing::PrintToString(skipped);
    EXPECT_EQ(PruneUnknownSchemaFields(crd), std::vector<std::string>{}) << file;
  }
}

}  // namespace
}  // namespace sluice::apiserver
