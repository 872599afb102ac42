#include "common/cel/schema_rules.h"

#include <map>
#include <memory>
#include <mutex>

#include "common/ascii.h"
#include "common/cel/program.h"
#include "common/json/fields.h"

namespace sluice::cel {
namespace {

using nlohmann::json;

// Compiled rules, shared by every caller; a rule is compiled once per process.
Result<std::shared_ptr<const Program>> CompiledRule(const std::string& rule) {
  static std::mutex mu;
  static std::map<std::string, Result<std::shared_ptr<const Program>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(rule);
  if (it == cache.end()) {
    Result<Program> program = Compile(rule);
    Result<std::shared_ptr<const Program>> entry =
        program.ok() ? Result<std::shared_ptr<const Program>>(
                           std::make_shared<const Program>(std::move(program).value()))
                     : Result<std::shared_ptr<const Program>>(program.status());
    it = cache.emplace(rule, std::move(entry)).first;
  }
  return it->second;
}

// "spec.autoscaling" + ".minReplicas" -> "spec.autoscaling.minReplicas".
std::string RulePath(const std::string& path, const json& rule) {
  std::string field_path = StringField(rule, "fieldPath");
  if (field_path.empty()) return path;
  if (field_path.front() == '.') field_path.erase(0, 1);
  return openapi::JoinPath(path, field_path);
}

// Who the report is for: a custom resource (messages as the operator has always shown them,
// evaluation errors skipped and logged), or the default of a CRD's schema node (kube's messages,
// evaluation errors are errors, as kube-apiserver refuses such a CRD).
enum class Wording { kResource, kDefault };

// kube's ruleErrorString: the rule's message if it has one, else the rule.
std::string RuleErrorString(const json& rule) {
  const std::string message(StripAsciiSpace(StringField(rule, "message")));
  return message.empty() ? std::string(StripAsciiSpace(StringField(rule, "rule"))) : message;
}

// kube-apiserver's field error for a rule that evaluated to false: by the rule's reason,
// "Invalid value: \"object\": <message>" (the default), "Forbidden: <message>", "Required
// value: <message>" or "Duplicate value: \"object\"", where "object" is the node's type.
std::string KubeFailureMessage(const json& schema, const json& rule) {
  const std::string message(StripAsciiSpace(StringField(rule, "message")));
  const std::string detail =
      message.empty() ? "failed rule: " + std::string(StripAsciiSpace(StringField(rule, "rule")))
                      : message;
  const std::string type = "\"" + StringField(schema, "type") + "\"";
  const std::string reason = StringField(rule, "reason");
  if (reason == "FieldValueForbidden") return "Forbidden: " + detail;
  if (reason == "FieldValueRequired") return "Required value: " + detail;
  if (reason == "FieldValueDuplicate") return "Duplicate value: " + type;
  return "Invalid value: " + type + ": " + detail;
}

// kube-apiserver's field error for a rule whose evaluation failed ("no such key: x").
std::string KubeEvaluationError(const json& schema, const json& rule, const std::string& error) {
  const std::string type = "\"" + StringField(schema, "type") + "\"";
  if (error.rfind("no such overload", 0) == 0) {
    return "Invalid value: " + type + ": '" + error +
           "': call arguments did not match a supported operator, function or macro signature "
           "for rule: " +
           RuleErrorString(rule);
  }
  return "Invalid value: " + type + ": " + error + " evaluating rule: " + RuleErrorString(rule);
}

void RunRules(const json& schema, const json& value, const json* old_value, const std::string& path,
              Wording wording, RuleReport& report) {
  if (value.is_null()) return;
  auto skip = [&](const std::string& text, const Status& why) {
    report.skipped.push_back((path.empty() ? "<root>" : path) + ": rule \"" + text +
                             "\": " + why.message());
  };
  if (auto rules = schema.find("x-kubernetes-validations");
      rules != schema.end() && rules->is_array()) {
    for (const json& rule : *rules) {
      if (!rule.is_object()) continue;
      const std::string text = StringField(rule, "rule");
      Result<std::shared_ptr<const Program>> program = CompiledRule(text);
      if (!program.ok()) {
        skip(text, program.status());
        continue;
      }
      if ((*program)->UsesOldSelf() && old_value == nullptr) continue;  // Create: no oldSelf.
      Result<bool> passed = (*program)->EvalRule(value, old_value);
      if (!passed.ok()) {
        // Over our step budget says nothing about kube's cost budget: never an error of the CRD.
        if (wording == Wording::kDefault && passed.status().code() != StatusCode::kTooLarge) {
          report.errors.push_back(
              {path, KubeEvaluationError(schema, rule, passed.status().message())});
        } else {
          skip(text, passed.status());
        }
        continue;
      }
      if (!*passed) {
        if (wording == Wording::kDefault) {
          report.errors.push_back({RulePath(path, rule), KubeFailureMessage(schema, rule)});
        } else {
          const std::string message = StringField(rule, "message");
          report.errors.push_back(
              {RulePath(path, rule), message.empty() ? "failed rule: " + text : message});
        }
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
        RunRules(*it, *child, old_child, openapi::JoinPath(path, it.key()), wording, report);
      }
    } else if (auto additional = schema.find("additionalProperties");
               additional != schema.end() && additional->is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        RunRules(*additional, *it, nullptr, openapi::JoinPath(path, it.key()), wording, report);
      }
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end() && items->is_object()) {
      // Items are not correlated with the old list, so transition rules inside lists are
      // skipped, which is the conservative reading of the API server's correlation rules.
      for (size_t i = 0; i < value.size(); ++i) {
        RunRules(*items, value[i], nullptr, openapi::IndexPath(path, i), wording, report);
      }
    }
  }
}

}  // namespace

void EvaluateSchemaRules(const json& schema, const json& value, const json* old_value,
                         const std::string& path, RuleReport& report) {
  RunRules(schema, value, old_value, path, Wording::kResource, report);
}

void EvaluateRulesOnDefault(const json& schema, const json& value, const std::string& path,
                            RuleReport& report) {
  // kube evaluates with oldSelf bound to the default itself, so transition rules run too.
  RunRules(schema, value, &value, path, Wording::kDefault, report);
}

}  // namespace sluice::cel
