// The Policy controller: a Policy runs nothing itself; its status gathers what the TrainerJob
// training it published and what the RolloutPools hosting it serve (docs/operator.md, "Policy").
//
//   status.version / weightsURL / updatedAt   the newest version a TrainerJob of this Policy
//                                            published, and where rank 0 serves it
//   status.servingReplicas                    ready replicas of the pools that host it
//   Ready            the spec is valid (InvalidSpec otherwise)
//   WeightsPublished a version exists
//   RolloutSynced    every hosting pool serves the current version (names the laggards)
//   Degraded         a TrainerJob of this Policy Failed
//
// Thread safety: Reconcile may run concurrently for different keys.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "operator/controllers/controller.h"

namespace sluice::controllers {

struct PolicyInformers {
  kube::Informer* policies = nullptr;
  kube::Informer* jobs = nullptr;
  kube::Informer* pools = nullptr;
};

// The Policy's status from the jobs that train it and the pools that host it (pure; other jobs
// and pools are ignored). The pointer form reads cached objects without copying them: a Policy
// hosted by a thousand pools is reconciled on every one of their status updates.
nlohmann::json PolicyStatus(const nlohmann::json& policy,
                            const std::vector<const nlohmann::json*>& jobs,
                            const std::vector<const nlohmann::json*>& pools, Clock::WallTime now);
nlohmann::json PolicyStatus(const nlohmann::json& policy, const std::vector<nlohmann::json>& jobs,
                            const std::vector<nlohmann::json>& pools, Clock::WallTime now);

class PolicyController {
 public:
  // `clock` (null: the system clock) dates the conditions.
  PolicyController(kube::DynamicClient& client, PolicyInformers informers,
                   kube::EventRecorder& events, Clock* clock = nullptr);

  Result<ReconcileResult> Reconcile(const std::string& key);

  // Policies a TrainerJob (spec.policyRef) or RolloutPool (spec.policies) refers to.
  static std::vector<std::string> PoliciesOfJob(const nlohmann::json& job);
  static std::vector<std::string> PoliciesOfPool(const nlohmann::json& pool);

 private:
  kube::DynamicClient& client_;
  PolicyInformers informers_;
  kube::EventRecorder& events_;
  Clock& clock_;
};

}  // namespace sluice::controllers
