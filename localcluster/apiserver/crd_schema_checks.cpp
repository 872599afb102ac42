#include "localcluster/apiserver/crd_schema_checks.h"

#include <algorithm>
#include <array>

#include "common/cel/schema_rules.h"
#include "common/openapi/schema.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// JSONSchemaProps of apiextensions.k8s.io/v1 as of Kubernetes 1.30 (types_jsonschema.go), in
// its field order.
constexpr std::array<std::string_view, 44> kKnownSchemaFields = {
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
};

// ValidationRule as of 1.30: fieldPath and reason came in 1.28, optionalOldSelf in 1.29.
constexpr std::array<std::string_view, 6> kKnownRuleFields = {
    "rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"};

constexpr std::array<std::string_view, 2> kKnownExternalDocsFields = {"description", "url"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& set, std::string_view key) {
  return std::find(set.begin(), set.end(), key) != set.end();
}

// Erases the keys of `object` that `known` rejects, recording "<path>.<key>" for each.
template <typename Known>
void EraseUnknown(json& object, const std::string& path, Known known,
                  std::vector<std::string>& unknown) {
  for (auto it = object.begin(); it != object.end();) {
    if (known(it.key())) {
      ++it;
      continue;
    }
    unknown.push_back(openapi::JoinPath(path, it.key()));
    it = object.erase(it);
  }
}

void PruneNode(json& node, const std::string& path, std::vector<std::string>& unknown) {
  if (!node.is_object()) return;
  EraseUnknown(node, path, IsKnownSchemaField, unknown);
  // Maps of schemas: strict decoding writes their keys after a dot ("properties.spec").
  for (const char* key : {"properties", "patternProperties", "definitions", "dependencies"}) {
    auto it = node.find(key);
    if (it == node.end() || !it->is_object()) continue;
    for (auto child = it->begin(); child != it->end(); ++child) {
      PruneNode(*child, openapi::JoinPath(openapi::JoinPath(path, key), child.key()), unknown);
    }
  }
  for (const char* key : {"allOf", "oneOf", "anyOf"}) {
    auto it = node.find(key);
    if (it == node.end() || !it->is_array()) continue;
    for (size_t i = 0; i < it->size(); ++i) {
      PruneNode((*it)[i], openapi::IndexPath(openapi::JoinPath(path, key), i), unknown);
    }
  }
  for (const char* key : {"not", "items", "additionalProperties", "additionalItems"}) {
    auto it = node.find(key);
    if (it == node.end()) continue;
    if (it->is_object()) PruneNode(*it, openapi::JoinPath(path, key), unknown);
    if (it->is_array()) {  // items as a list of schemas (not structural, but decodable).
      for (size_t i = 0; i < it->size(); ++i) {
        PruneNode((*it)[i], openapi::IndexPath(openapi::JoinPath(path, key), i), unknown);
      }
    }
  }
  if (auto docs = node.find("externalDocs"); docs != node.end() && docs->is_object()) {
    EraseUnknown(*docs, openapi::JoinPath(path, "externalDocs"), IsKnownExternalDocsField, unknown);
  }
  if (auto rules = node.find("x-kubernetes-validations");
      rules != node.end() && rules->is_array()) {
    const std::string rules_path = openapi::JoinPath(path, "x-kubernetes-validations");
    for (size_t i = 0; i < rules->size(); ++i) {
      json& rule = (*rules)[i];
      if (rule.is_object()) {
        EraseUnknown(rule, openapi::IndexPath(rules_path, i), IsKnownValidationRuleField, unknown);
      }
    }
  }
}

// kube's walk of defaults (structural defaulting validation): properties and items, not
// additionalProperties (defaults are forbidden below a map's values).
void CheckDefaultsBelow(const json& node, const std::string& path, bool root,
                        openapi::FieldErrors& errors, std::vector<std::string>* skipped) {
  if (!node.is_object()) return;
  if (auto def = node.find("default"); def != node.end()) {
    openapi::ValidateOptions options;
    options.is_resource_root = false;
    // A default that fails its own schema is CheckStructural's error; kube runs the rules only
    // on one that passes.
    if (openapi::Validate(node, *def, options).empty()) {
      cel::RuleReport report;
      cel::EvaluateRulesOnDefault(node, *def, openapi::JoinPath(path, "default"), report);
      for (openapi::FieldError& e : report.errors) errors.push_back(std::move(e));
      if (skipped != nullptr) {
        skipped->insert(skipped->end(), report.skipped.begin(), report.skipped.end());
      }
    }
  }
  if (auto items = node.find("items"); items != node.end() && items->is_object()) {
    CheckDefaultsBelow(*items, openapi::JoinPath(path, "items"), false, errors, skipped);
  }
  if (auto props = node.find("properties"); props != node.end() && props->is_object()) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      const bool meta =
          root && (it.key() == "apiVersion" || it.key() == "kind" || it.key() == "metadata");
      if (meta) continue;  // Defaults are forbidden there (CheckStructural).
      CheckDefaultsBelow(*it, openapi::KeyPath(openapi::JoinPath(path, "properties"), it.key()),
                         false, errors, skipped);
    }
  }
}

}  // namespace

bool IsKnownSchemaField(std::string_view key) { return Contains(kKnownSchemaFields, key); }

bool IsKnownValidationRuleField(std::string_view key) { return Contains(kKnownRuleFields, key); }

bool IsKnownExternalDocsField(std::string_view key) {
  return Contains(kKnownExternalDocsFields, key);
}

std::vector<std::string> PruneUnknownSchemaFields(json& crd) {
  std::vector<std::string> unknown;
  auto spec = crd.find("spec");
  if (spec == crd.end() || !spec->is_object()) return unknown;
  auto versions = spec->find("versions");
  if (versions == spec->end() || !versions->is_array()) return unknown;
  for (size_t i = 0; i < versions->size(); ++i) {
    json& version = (*versions)[i];
    if (!version.is_object()) continue;
    auto schema = version.find("schema");
    if (schema == version.end() || !schema->is_object()) continue;
    auto root = schema->find("openAPIV3Schema");
    if (root == schema->end()) continue;
    PruneNode(*root, openapi::IndexPath("spec.versions", i) + ".schema.openAPIV3Schema", unknown);
  }
  return unknown;
}

CrdDecodeCheck DecodeCrdSchemas(json& crd, FieldValidation mode) {
  CrdDecodeCheck check;
  json pruned = crd;
  const std::vector<std::string> unknown = PruneUnknownSchemaFields(pruned);
  if (unknown.empty()) return check;
  if (mode == FieldValidation::kStrict) {
    check.decode_error = StrictDecodingError("CustomResourceDefinition", "v1", unknown);
    return check;
  }
  if (mode == FieldValidation::kWarn) {
    for (const std::string& path : unknown) {
      check.warnings.push_back("unknown field \"" + path + "\"");
    }
  }
  crd = std::move(pruned);
  return check;
}

openapi::FieldErrors CheckDefaultRules(const json& schema, const std::string& path,
                                       std::vector<std::string>* skipped) {
  openapi::FieldErrors errors;
  CheckDefaultsBelow(schema, path, /*root=*/true, errors, skipped);
  return errors;
}

}  // namespace sluice::apiserver
