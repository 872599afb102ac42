// Deployment status conditions with kube's update rules (deployment_sync.h writes them):
// conditions are {type, status, lastUpdateTime, lastTransitionTime, reason, message} entries of
// status.conditions, one per type.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::node {

// The condition of `type` in status.conditions; null when absent. The pointer is into `status`
// and is invalidated by any change to its conditions.
const nlohmann::json* FindDeploymentCondition(const nlohmann::json& status,
                                              const std::string& type);
// A condition with both times `now` (a metav1.Time string).
nlohmann::json NewDeploymentCondition(const std::string& type, const std::string& status,
                                      const std::string& reason, const std::string& message,
                                      const std::string& now);
// Puts `condition` in place of its type's, as kube's SetDeploymentCondition: when the current
// one has the same status and reason nothing changes (not even the message or times); with the
// same status only, the current lastTransitionTime is kept.
void SetDeploymentCondition(nlohmann::json& status, nlohmann::json condition);
// Removes the condition of `type` (status.conditions stays, possibly empty).
void RemoveDeploymentCondition(nlohmann::json& status, const std::string& type);

}  // namespace sluice::node
