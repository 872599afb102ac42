#include "localcluster/apiserver/custom_resources.h"

#include <algorithm>
#include <cctype>

#include "common/ascii.h"
#include "common/cel/schema_rules.h"
#include "common/openapi/schema.h"
#include "common/time_format.h"
#include "localcluster/apiserver/crd_schema_checks.h"
#include "localcluster/apiserver/object_rules.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

}  // namespace

Result<FieldValidation> ParseFieldValidation(std::string_view value) {
  if (value.empty() || value == "Warn") return FieldValidation::kWarn;
  if (value == "Ignore") return FieldValidation::kIgnore;
  if (value == "Strict") return FieldValidation::kStrict;
  return Status::InvalidArgument("fieldValidation: Unsupported value: \"" + std::string(value) +
                                     "\": supported values: \"Ignore\", \"Warn\", \"Strict\"",
                                 "fieldValidation");
}

Status StrictDecodingError(std::string_view kind, std::string_view version,
                           const std::vector<std::string>& unknown_paths) {
  std::string list;
  for (const std::string& path : unknown_paths) {
    list += (list.empty() ? "" : ", ") + std::string("unknown field \"") + path + "\"";
  }
  return Status::InvalidArgument(std::string(kind) + " in version \"" + std::string(version) +
                                 "\" cannot be handled as a " + std::string(kind) +
                                 ": strict decoding error: " + list);
}

const json* CrdVersionSchema(const json& crd, std::string_view version) {
  const json* versions = crd.contains("spec") ? &crd["spec"] : nullptr;
  if (versions == nullptr || !versions->contains("versions")) return nullptr;
  for (const json& v : (*versions)["versions"]) {
    if (v.value("name", "") != version) continue;
    const json::json_pointer ptr("/schema/openAPIV3Schema");
    if (v.contains(ptr)) return &v[ptr];
    return nullptr;
  }
  return nullptr;
}

CustomResourceCheck CheckCustomResource(const json& crd, std::string_view version, json& object,
                                        const json* old_object, FieldValidation mode) {
  CustomResourceCheck check;
  const json* schema = CrdVersionSchema(crd, version);
  if (schema == nullptr)
    return check;  // No schema: preserve everything (ValidateCrdSpec
                   // requires one, so only legacy objects get here).
  std::vector<std::string> unknown = openapi::Prune(*schema, object, /*is_resource_root=*/true);
  if (!unknown.empty()) {
    if (mode == FieldValidation::kStrict) {
      const std::string kind = crd.value("/spec/names/kind"_json_pointer, "");
      check.decode_error = StrictDecodingError(kind, version, unknown);
      return check;
    }
    if (mode == FieldValidation::kWarn) {
      for (const std::string& path : unknown) {
        check.warnings.push_back("unknown field \"" + path + "\"");
      }
    }
  }
  openapi::ApplyDefaults(*schema, object);
  openapi::ValidateOptions options;
  options.reject_unknown_fields = false;
  options.is_resource_root = true;
  check.errors = openapi::Validate(*schema, object, options);
  if (check.errors.empty()) {
    cel::RuleReport rules;
    cel::EvaluateSchemaRules(*schema, object, old_object, "", rules);
    check.errors = std::move(rules.errors);
    check.skipped_rules = std::move(rules.skipped);
  }
  return check;
}

openapi::FieldErrors ValidateCrdSpec(const json& crd, std::vector<std::string>* skipped_rules) {
  openapi::FieldErrors errors;
  const json spec = crd.value("spec", json::object());
  const json versions = spec.value("versions", json::array());
  if (!versions.is_array() || versions.empty()) {
    errors.push_back({"spec.versions",
                      "Invalid value: must have exactly one version marked as "
                      "storage version"});
    return errors;
  }
  int storage = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    const json& v = versions[i];
    const std::string path = openapi::IndexPath("spec.versions", i);
    if (v.value("storage", false)) ++storage;
    const json::json_pointer ptr("/schema/openAPIV3Schema");
    if (!v.contains(ptr)) {
      if (v.value("served", false)) {
        errors.push_back(
            {path + ".schema.openAPIV3Schema", "Required value: schemas are required"});
      }
      continue;
    }
    const std::string schema_path = path + ".schema.openAPIV3Schema";
    const openapi::FieldErrors structural = openapi::CheckStructural(v[ptr]);
    for (const openapi::FieldError& e : structural) {
      errors.push_back({openapi::JoinPath(schema_path, e.field), e.message});
    }
    // kube validates defaults against their rules only once the schema is structural.
    if (structural.empty()) {
      for (openapi::FieldError& e : CheckDefaultRules(v[ptr], schema_path, skipped_rules)) {
        errors.push_back(std::move(e));
      }
    }
  }
  if (storage != 1) {
    errors.push_back({"spec.versions",
                      "Invalid value: must have exactly one version marked as "
                      "storage version"});
  }
  return errors;
}

json AcceptedCrdStatus(const json& crd, const json& previous_status, Clock::WallTime now) {
  const json spec = crd.value("spec", json::object());
  json names = spec.value("names", json::object());
  const std::string kind = names.value("kind", "");
  if (!names.contains("listKind")) names["listKind"] = kind + "List";
  if (!names.contains("singular")) names["singular"] = AsciiLower(kind);
  const std::string ts = FormatTime(now);
  auto condition = [&](const std::string& type, const std::string& reason,
                       const std::string& message) {
    std::string since = ts;
    for (const json& c : previous_status.value("conditions", json::array())) {
      if (c.value("type", "") == type && c.value("status", "") == "True") {
        since = c.value("lastTransitionTime", ts);
      }
    }
    return json{{"type", type},
                {"status", "True"},
                {"reason", reason},
                {"message", message},
                {"lastTransitionTime", since}};
  };
  json stored = previous_status.value("storedVersions", json::array());
  for (const json& v : spec.value("versions", json::array())) {
    if (v.value("storage", false)) {
      const std::string name = v.value("name", "");
      if (std::find(stored.begin(), stored.end(), name) == stored.end()) stored.push_back(name);
    }
  }
  return json{
      {"acceptedNames", names},
      {"conditions", json::array({condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                                  condition("Established", "InitialNamesAccepted",
                                            "the initial names have been accepted")})},
      {"storedVersions", stored}};
}

}  // namespace sluice::apiserver
