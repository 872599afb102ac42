#include "common/cel/schema_rules.h"

#include <map>
#include <memory>
#include <mutex>

#include "common/cel/program.h"

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
  std::string field_path = rule.value("fieldPath", "");
  if (field_path.empty()) return path;
  if (field_path.front() == '.') field_path.erase(0, 1);
  return openapi::JoinPath(path, field_path);
}

void RunRules(const json& schema, const json& value, const json* old_value, const std::string& path,
              RuleReport& report) {
  if (value.is_null()) return;
  if (auto rules = schema.find("x-kubernetes-validations");
      rules != schema.end() && rules->is_array()) {
    for (const json& rule : *rules) {
      const std::string text = rule.value("rule", "");
      Result<std::shared_ptr<const Program>> program = CompiledRule(text);
      if (!program.ok()) {
        report.skipped.push_back((path.empty() ? "<root>" : path) + ": rule \"" + text +
                                 "\": " + program.status().message());
        continue;
      }
      if ((*program)->UsesOldSelf() && old_value == nullptr) continue;  // Create: no oldSelf.
      Result<bool> passed = (*program)->EvalRule(value, old_value);
      if (!passed.ok()) {
        report.skipped.push_back((path.empty() ? "<root>" : path) + ": rule \"" + text +
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

}  // namespace

void EvaluateSchemaRules(const json& schema, const json& value, const json* old_value,
                         const std::string& path, RuleReport& report) {
  RunRules(schema, value, old_value, path, report);
}

}  // namespace sluice::cel
