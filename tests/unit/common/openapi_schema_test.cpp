#include <gtest/gtest.h>

#include "common/openapi/schema.h"

namespace sluice::openapi {
namespace {

using nlohmann::json;

// A small custom resource schema exercising every supported keyword.
const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "spec": {
      "type": "object",
      "required": ["name"],
      "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                 "minLength": 1, "maxLength": 10},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 8, "default": 1},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1},
        "order": {"type": "string", "enum": ["fifo", "edf"], "default": "fifo"},
        "memory": {"x-kubernetes-int-or-string": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "options": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
                 "x-kubernetes-list-type": "set"},
        "regions": {
          "type": "array", "minItems": 1,
          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
          "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"},
                                   "weight": {"type": "integer", "default": 1}}}
        },
        "drain": {"type": "object", "default": {},
                  "properties": {"graceSeconds": {"type": "integer", "default": 30}}},
        "when": {"type": "string", "format": "date-time"},
        "note": {"type": "string", "nullable": true}
      }
    },
    "status": {"type": "object", "properties": {"version": {"type": "integer"}}}
  }
})");

json Resource(json spec) {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "Thing"},
          {"metadata", {{"name", "x"}, {"labels", {{"a", "b"}}}}},
          {"spec", std::move(spec)}};
}

TEST(OpenApiSchemaTest, AValidObjectHasNoErrors) {
  json obj = Resource(json::parse(R"({"name": "ok-1", "replicas": 3, "ratio": 0.5,
      "order": "edf", "memory": "2Gi", "labels": {"k": "v"}, "options": {"any": {"thing": 1}},
      "tags": ["a", "b"], "regions": [{"name": "us"}, {"name": "eu", "weight": 2}],
      "when": "2026-11-22T10:00:00Z", "note": null})"));
  EXPECT_EQ(Validate(kSchema, obj), FieldErrors{});
}

TEST(OpenApiSchemaTest, ReportsEveryProblemInKubernetesWords) {
  json obj = Resource(json::parse(R"({"replicas": 9, "ratio": 0, "order": "lifo",
      "memory": true, "labels": {"k": 1}, "tags": ["a", "a", "b"], "regions": [{"name": "us"},
      {"name": "us"}], "when": "yesterday", "name2": 1, "drain": {"graceSeconds": "x"}})"));
  obj["spec"]["note"] = nullptr;
  const FieldErrors errors = Validate(kSchema, obj);
  const FieldErrors expected = {
      {"spec.name", "Required value"},
      {"spec.drain.graceSeconds", "Invalid value: \"string\": must be of type integer"},
      {"spec.labels.k", "Invalid value: \"integer\": must be of type string"},
      {"spec.memory", "Invalid value: \"boolean\": must be of type integer or string"},
      {"spec.name2", "unknown field \"spec.name2\""},
      {"spec.order", "Unsupported value: \"lifo\": supported values: \"fifo\", \"edf\""},
      {"spec.ratio", "Invalid value: 0: should be greater than 0"},
      {"spec.regions[1]", "Duplicate value: {\"name\":\"us\"}"},
      {"spec.replicas", "Invalid value: 9: should be less than or equal to 8"},
      {"spec.tags", "Too many: 3: must have at most 2 items"},
      {"spec.tags[1]", "Duplicate value: \"a\""},
      {"spec.when", "Invalid value: \"yesterday\": must be an RFC 3339 date-time"},
  };
  EXPECT_EQ(errors, expected) << Describe(errors);
}

TEST(OpenApiSchemaTest, StringRules) {
  json obj = Resource({{"name", "Bad_Name"}});
  FieldErrors errors = Validate(kSchema, obj);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "Invalid value: \"Bad_Name\": should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'");
  errors = Validate(kSchema, Resource({{"name", "much-too-long-name"}}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "Too long: may not be longer than 10");
  errors = Validate(kSchema, Resource({{"name", ""}}));
  ASSERT_EQ(errors.size(), 2u);  // Too short, and so the pattern fails too.
  EXPECT_EQ(errors[0].message, "Invalid value: \"\": should be at least 1 chars long");
  errors = Validate(kSchema, Resource({{"name", "a"}, {"regions", json::array()}}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            (FieldError{"spec.regions", "Invalid value: 0: should have at least 1 items"}));
}

TEST(OpenApiSchemaTest, CountKeywordsWorkWhetherStoredSignedOrUnsigned) {
  // Schemas read from YAML hold signed integers; json::parse gives unsigned ones.
  json schema = {{"type", "array"}, {"items", {{"type", "string"}}}};
  schema["maxItems"] = int64_t{1};
  schema["minItems"] = uint64_t{1};
  ValidateOptions options;
  options.is_resource_root = false;
  EXPECT_EQ(Validate(schema, json::array({"a", "b"}), options).size(), 1u);
  EXPECT_EQ(Validate(schema, json::array(), options).size(), 1u);
  EXPECT_TRUE(Validate(schema, json::array({"a"}), options).empty());
}

TEST(OpenApiSchemaTest, UnknownFieldsCanBeIgnoredAndPruned) {
  json obj = Resource({{"name", "a"}, {"extra", 1}, {"options", {{"kept", true}}}});
  obj["spec"]["regions"] = json::parse(R"([{"name": "us", "junk": 1}])");
  obj["surprise"] = 1;
  ValidateOptions lenient;
  lenient.reject_unknown_fields = false;
  EXPECT_EQ(Validate(kSchema, obj, lenient), FieldErrors{});
  const std::vector<std::string> removed = Prune(kSchema, obj);
  EXPECT_EQ(removed, (std::vector<std::string>{"spec.extra", "spec.regions[0].junk", "surprise"}));
  EXPECT_EQ(obj["spec"]["options"]["kept"], true);
  EXPECT_EQ(obj["metadata"]["labels"]["a"], "b");  // Metadata is the API server's business.
  EXPECT_EQ(Validate(kSchema, obj), FieldErrors{});
}

TEST(OpenApiSchemaTest, DefaultsApplyTopDownAndInsideLists) {
  json obj = Resource({{"name", "a"}, {"regions", json::parse(R"([{"name": "us"}])")}});
  obj["spec"]["order"] = nullptr;  // Not nullable: the default replaces it.
  ApplyDefaults(kSchema, obj);
  EXPECT_EQ(obj["spec"]["replicas"], 1);
  EXPECT_EQ(obj["spec"]["order"], "fifo");
  EXPECT_EQ(obj["spec"]["drain"]["graceSeconds"], 30);  // {} defaulted, then its child.
  EXPECT_EQ(obj["spec"]["regions"][0]["weight"], 1);
  EXPECT_FALSE(obj["spec"].contains("ratio"));  // No default, stays absent.
  // Explicit values win.
  json explicit_obj = Resource({{"name", "a"}, {"replicas", 0}, {"drain", {{"graceSeconds", 5}}}});
  ApplyDefaults(kSchema, explicit_obj);
  EXPECT_EQ(explicit_obj["spec"]["replicas"], 0);
  EXPECT_EQ(explicit_obj["spec"]["drain"]["graceSeconds"], 5);
}

TEST(OpenApiSchemaTest, StructuralRules) {
  EXPECT_EQ(CheckStructural(kSchema), FieldErrors{});
  const json bad = json::parse(R"({
    "type": "object",
    "properties": {
      "untyped": {"description": "no type"},
      "both": {"type": "object", "properties": {"a": {"type": "string"}},
               "additionalProperties": {"type": "string"}},
      "closed": {"type": "object", "additionalProperties": false},
      "list": {"type": "array"},
      "tuple": {"type": "array", "items": [{"type": "string"}]},
      "badDefault": {"type": "integer", "minimum": 1, "default": 0},
      "mapNoKeys": {"type": "array", "x-kubernetes-list-type": "map",
                    "items": {"type": "object"}},
      "mapOptionalKey": {"type": "array", "x-kubernetes-list-type": "map",
                         "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
      "regex": {"type": "string", "pattern": "(unclosed"},
      "union": {"type": "object", "anyOf": [{"required": ["a"]}]}
    }
  })");
  const FieldErrors errors = CheckStructural(bad);
  auto has = [&](const std::string& field, const std::string& fragment) {
    for (const FieldError& e : errors) {
      if (e.field == field && e.message.find(fragment) != std::string::npos) return true;
    }
    return false;
  };
  // Paths in kube's notation: map keys in brackets, as kube-apiserver prints schema paths.
  EXPECT_TRUE(has("properties[untyped].type", "must not be empty")) << Describe(errors);
  EXPECT_TRUE(has("properties[both].additionalProperties", "mutual exclusive"));
  EXPECT_TRUE(has("properties[closed].additionalProperties", "must not be false"));
  EXPECT_TRUE(has("properties[list].items", "must be specified for arrays"));
  EXPECT_TRUE(has("properties[tuple].items", "single schema"));
  EXPECT_TRUE(has("properties[badDefault].default", "should be greater than or equal to 1"));
  EXPECT_TRUE(has("properties[mapNoKeys].x-kubernetes-list-map-keys", "must not be empty"));
  EXPECT_TRUE(has("properties[mapOptionalKey].items", "required or defaulted"));
  EXPECT_TRUE(has("properties[regex].pattern", "not a valid regular expression"));
  EXPECT_TRUE(has("properties[union].anyOf", "not supported"));
  EXPECT_EQ(errors.size(), 10u) << Describe(errors);
}

// kube-apiserver's wording per level and for the resource's own apiVersion, kind and metadata
// (k8s.io/apiextensions-apiserver pkg/apiserver/schema/validation.go, ValidateStructural, and
// the top-level default rule of pkg/apis/apiextensions/validation/validation.go).
TEST(OpenApiSchemaTest, StructuralRulesForTheRootAndItsMetadata) {
  struct Case {
    const char* name;
    const char* schema;
    FieldErrors expected;
  };
  const Case cases[] = {
      {"root without type",
       R"({"properties": {}})",
       {{"type", "Required value: must not be empty at the root"}}},
      {"root not an object",
       R"({"type": "array", "items": {"type": "string"}})",
       {{"type", "Invalid value: \"array\": must be object at the root"}}},
      {"item without type",
       R"({"type": "object", "properties": {"l": {"type": "array",
           "items": {"description": "x"}}}})",
       {{"properties[l].items.type",
         "Required value: must not be empty for specified array items"}}},
      {"additionalProperties at the root",
       R"({"type": "object", "additionalProperties": {"type": "string"}})",
       {{"additionalProperties", "Forbidden: must not be used at the root"}}},
      {"kind not a string",
       R"({"type": "object", "properties": {"kind": {"type": "integer"}}})",
       {{"properties[kind].type", "Invalid value: \"integer\": must be string"}}},
      {"metadata not an object",
       R"({"type": "object", "properties": {"metadata": {"type": "string"}}})",
       {{"properties[metadata].type", "Invalid value: \"string\": must be object"}}},
      {"metadata with a description",
       R"({"type": "object", "properties": {"metadata": {"type": "object",
           "description": "Standard object metadata."}}})",
       {{"properties[metadata]",
         "Forbidden: must not specify anything other than name and generateName, but metadata "
         "is implicitly specified"}}},
      {"metadata restricting labels",
       R"({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
           "name": {"type": "string"}, "labels": {"type": "object"}}}}})",
       {{"properties[metadata]",
         "Forbidden: must not specify anything other than name and generateName, but metadata "
         "is implicitly specified"}}},
      {"metadata with a rule",
       R"({"type": "object", "properties": {"metadata": {"type": "object",
           "x-kubernetes-validations": [{"rule": "self.name.size() < 10"}]}}})",
       {{"properties[metadata]",
         "Forbidden: must not specify anything other than name and generateName, but metadata "
         "is implicitly specified"}}},
      {"default in top-level metadata",
       R"({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
           "name": {"type": "string", "default": "x"}}}}})",
       {{"properties[metadata].properties[name].default",
         "Forbidden: must not be set in top-level metadata"}}},
      {"metadata restricting only name and generateName",
       R"({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
           "name": {"type": "string", "maxLength": 20},
           "generateName": {"type": "string"}}}}})",
       {}},
      {"zero values are absent",
       R"({"type": "object", "properties": {"metadata": {"type": "object", "description": "",
           "nullable": false, "properties": {}}}})",
       {}},
      {"nested metadata may say anything",
       R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {
           "metadata": {"type": "object", "description": "Labels of the pods.",
                        "properties": {"labels": {"type": "object"}}}}}}})",
       {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckStructural(json::parse(c.schema)), c.expected) << c.name;
  }
}

TEST(OpenApiSchemaTest, ToStatusListsEveryError) {
  EXPECT_TRUE(ToStatus({}, "x").ok());
  Status s = ToStatus({{"spec.a", "Required value"}, {"spec.b", "unknown field \"b\""}},
                      "RolloutPool default/rp");
  EXPECT_EQ(s.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(s.field(), "spec.a");
  EXPECT_EQ(
      s.message(),
      "RolloutPool default/rp is invalid:\nspec.a: Required value\nspec.b: unknown field \"b\"");
}

}  // namespace
}  // namespace sluice::openapi
