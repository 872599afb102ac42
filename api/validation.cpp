#include "api/validation.h"

#include <regex>

#include "api/crds/crds.h"
#include "api/meta.h"
#include "common/cel/schema_rules.h"
#include "common/openapi/schema.h"

namespace sluice::api {
namespace {

using nlohmann::json;
using openapi::FieldError;
using openapi::FieldErrors;

const ResourceKind* KindOf(const json& object, Status* error) {
  if (!object.is_object()) {
    *error = Status::InvalidArgument("a manifest must be an object");
    return nullptr;
  }
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  if (api_version != kApiVersion) {
    *error = Status::Unprocessable("Unsupported value: \"" + api_version +
                                       "\": supported values: \"" + std::string(kApiVersion) + "\"",
                                   "apiVersion");
    return nullptr;
  }
  const ResourceKind* k = FindKind(kind);
  if (k == nullptr) {
    std::string list;
    for (const ResourceKind& known : Kinds())
      list += (list.empty() ? "\"" : ", \"") + known.kind + "\"";
    *error = Status::Unprocessable("Unsupported value: \"" + kind + "\": supported values: " + list,
                                   "kind");
  }
  return k;
}

void ValidateMetadata(const json& object, FieldErrors& errors) {
  // DNS-1123 subdomain, the rule the API server applies to most names.
  static const std::regex kName(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    errors.push_back({"metadata.name", "Required value: name or generateName is required"});
    return;
  }
  const std::string name = meta->value("name", "");
  if (name.empty()) {
    if (meta->value("generateName", "").empty()) {
      errors.push_back({"metadata.name", "Required value: name or generateName is required"});
    }
    return;
  }
  if (name.size() > 253 || !std::regex_match(name, kName)) {
    errors.push_back(
        {"metadata.name", "Invalid value: \"" + name +
                              "\": a lowercase RFC 1123 subdomain must consist of lower case "
                              "alphanumeric characters, '-' or '.', and must start and end with an "
                              "alphanumeric character"});
  }
}

}  // namespace

Status DefaultObject(json& object) {
  Status error;
  const ResourceKind* kind = KindOf(object, &error);
  if (kind == nullptr) return error;
  openapi::ApplyDefaults(kind->schema, object);
  return Status::Ok();
}

ValidationReport ValidateObject(const json& object, const json* old_object) {
  ValidationReport report;
  Status error;
  const ResourceKind* kind = KindOf(object, &error);
  if (kind == nullptr) {
    report.errors.push_back({error.field(), error.message()});
    return report;
  }
  ValidateMetadata(object, report.errors);
  FieldErrors schema_errors = openapi::Validate(kind->schema, object);
  report.errors.insert(report.errors.end(), schema_errors.begin(), schema_errors.end());
  if (schema_errors.empty()) {
    cel::RuleReport rules;
    cel::EvaluateSchemaRules(kind->schema, object, old_object, "", rules);
    report.errors.insert(report.errors.end(), rules.errors.begin(), rules.errors.end());
    report.skipped_rules = std::move(rules.skipped);
  }
  return report;
}

Status DefaultAndValidate(json& object, const json* old_object) {
  SLUICE_RETURN_IF_ERROR(DefaultObject(object));
  ValidationReport report = ValidateObject(object, old_object);
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  const std::string what = object.value("kind", "object") + " " + meta.value("name", "");
  return openapi::ToStatus(report.errors, what);
}

}  // namespace sluice::api
