#include "operator/api/validation.h"

#include <map>
#include <memory>
#include <mutex>
#include <regex>

#include "common/cel/program.h"
#include "common/openapi/schema.h"
#include "operator/api/crds.h"
#include "operator/api/meta.h"

namespace sluice::api {
namespace {

using nlohmann::json;
using openapi::FieldError;
using openapi::FieldErrors;

// Compiled rules, shared by every caller; a rule is compiled once per process.
Result<std::shared_ptr<const cel::Program>> CompiledRule(const std::string& rule) {
  static std::mutex mu;
  static std::map<std::string, Result<std::shared_ptr<const cel::Program>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(rule);
  if (it == cache.end()) {
    Result<cel::Program> program = cel::Compile(rule);
    Result<std::shared_ptr<const cel::Program>> entry =
        program.ok() ? Result<std::shared_ptr<const cel::Program>>(
                           std::make_shared<const cel::Program>(std::move(program).value()))
                     : Result<std::shared_ptr<const cel::Program>>(program.status());
    it = cache.emplace(rule, std::move(entry)).first;
  }
  return it->second;
}

// "spec.autoscaling" + ".minReplicas" -> "spec.autoscaling.minReplicas".
std::string RulePath(const std::string& path, const json& rule) {
  std::string field_path = rule.value("fieldPath", "");
  if (field_path.empty()) return path;
  if (field_path.front() == '.') field_path.erase(0, 1);
  return openapi::JoinPath(path, field_path);
}

void RunRules(const json& schema, const json& value, const json* old_value, const std::string& path,
              ValidationReport& report) {
  if (value.is_null()) return;
  if (auto rules = schema.find("x-kubernetes-validations");
      rules != schema.end() && rules->is_array()) {
    for (const json& rule : *rules) {
      const std::string text = rule.value("rule", "");
      Result<std::shared_ptr<const cel::Program>> program = CompiledRule(text);
      if (!program.ok()) {
        report.skipped_rules.push_back((path.empty() ? "<root>" : path) + ": rule \"" + text +
                                       "\": " + program.status().message());
        continue;
      }
      if ((*program)->UsesOldSelf() && old_value == nullptr) continue;  // Create: no oldSelf.
      Result<bool> passed = (*program)->EvalRule(value, old_value);
      if (!passed.ok()) {
        report.skipped_rules.push_back((path.empty() ? "<root>" : path) + ": rule \"" + text +
                                       "\": " + passed.status().message());
        continue;
      }
      if (!*passed) {
        const std::string message = rule.value("message", "");
        report.errors.push_back(
            {RulePath(path, rule), message.empty() ? "failed rule: " + text : message});
      }
    }
  }
  if (value.is_object()) {
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        auto child = value.find(it.key());
        if (child == value.end()) continue;
        const json* old_child = nullptr;
        if (old_value != nullptr && old_value->is_object()) {
          auto o = old_value->find(it.key());
          if (o != old_value->end()) old_child = &*o;
        }
        RunRules(*it, *child, old_child, openapi::JoinPath(path, it.key()), report);
      }
    } else if (auto additional = schema.find("additionalProperties");
               additional != schema.end() && additional->is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        RunRules(*additional, *it, nullptr, openapi::JoinPath(path, it.key()), report);
      }
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end() && items->is_object()) {
      // Items are not correlated with the old list, so transition rules inside lists are
      // skipped, which is the conservative reading of the API server's correlation rules.
      for (size_t i = 0; i < value.size(); ++i) {
        RunRules(*items, value[i], nullptr, openapi::IndexPath(path, i), report);
      }
    }
  }
}

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
  if (schema_errors.empty()) RunRules(kind->schema, object, old_object, "", report);
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
