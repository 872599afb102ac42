#include "localcluster/node/deployment_conditions.h"

#include <utility>

namespace sluice::node {

using nlohmann::json;

const json* FindDeploymentCondition(const json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) {
    return nullptr;
  }
  for (const json& c : status["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

json NewDeploymentCondition(const std::string& type, const std::string& status,
                            const std::string& reason, const std::string& message,
                            const std::string& now) {
  return {{"type", type},          {"status", status},
          {"lastUpdateTime", now}, {"lastTransitionTime", now},
          {"reason", reason},      {"message", message}};
}

void SetDeploymentCondition(json& status, json condition) {
  const std::string type = condition.value("type", "");
  if (const json* current = FindDeploymentCondition(status, type)) {
    if (current->value("status", "") == condition.value("status", "")) {
      if (current->value("reason", "") == condition.value("reason", "")) return;
      if (current->contains("lastTransitionTime")) {
        condition["lastTransitionTime"] = (*current)["lastTransitionTime"];
      }
    }
  }
  RemoveDeploymentCondition(status, type);
  if (!status["conditions"].is_array()) status["conditions"] = json::array();
  status["conditions"].push_back(std::move(condition));
}

void RemoveDeploymentCondition(json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) {
    return;
  }
  json kept = json::array();
  for (const json& c : status["conditions"]) {
    if (!c.is_object() || c.value("type", "") != type) kept.push_back(c);
  }
  status["conditions"] = kept;
}

}  // namespace sluice::node
