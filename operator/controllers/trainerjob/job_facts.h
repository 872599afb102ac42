// The facts Plan (plan.h) needs about a TrainerJob and its rank Pods, read from their objects.
//
// Pure functions. Thread safety: values only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/controllers/trainerjob/plan.h"

namespace sluice::controllers::trainerjob {

// One rank Pod; `attempt` and `template_hash` are the job's current ones (RankPodCurrent).
RankPod RankPodFrom(const nlohmann::json& pod, int attempt, const std::string& template_hash);

// The facts of a defaulted `job` and its rank `pods`, without rank 0's report and the lagging
// pools (the reconciler asks for those).
JobFacts JobFactsOf(const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
                    const std::string& template_hash);

}  // namespace sluice::controllers::trainerjob
