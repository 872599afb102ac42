// Whether a finished TrainerJob's rank 0 should keep serving its final weights.
//
// A trainer's last version is announced a moment before the trainer finishes, and rank 0 is the
// only source of it (relays hold what they fetched from it). Rollout replicas still fetching it,
// or joining, when the rank pods are deleted could never load it: the Dataflow's evaluation at
// the final version would never finish and a joining replica would never become ready. So rank 0
// lingers after its last step (sluice-trainer --final-weights-grace) and the operator deletes the
// rank pods once every RolloutPool hosting the policy holds the final version on every replica,
// or once the grace has passed.
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::controllers {

// How long a finished rank 0 serves its final weights at most (the trainer's
// --final-weights-grace; the operator waits as long).
inline constexpr std::chrono::seconds kFinalWeightsGrace{120};

// The RolloutPools among `pools` (objects of one namespace) that host `policy` (spec.policies)
// and lack `final_version` on some replica, each as "NAME (WHY)": "version 99 of 100" when the
// lowest version its Ready replicas report (status.policies[].version) is older or unknown,
// "1 of 3 replicas not ready" when a replica has not joined yet (status.readyReplicas below
// status.replicas). Pools being deleted and pools with no replicas are not waited for.
std::vector<std::string> PoolsWithoutFinalWeights(const std::vector<nlohmann::json>& pools,
                                                  const std::string& policy, int64_t final_version);

// Whether to keep the rank pods of a job that finished (Succeeded) at `completion_s` (Unix
// seconds; 0 unknown) at `now_s`: while `lagging` pools remain, within kFinalWeightsGrace.
bool KeepRanksForFinalWeights(const std::vector<std::string>& lagging, int64_t completion_s,
                              int64_t now_s);

}  // namespace sluice::controllers
