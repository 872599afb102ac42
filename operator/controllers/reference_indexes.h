// Indices of the informer caches by the Sluice objects an object refers to, so a controller
// finds "the pools hosting Policy p" or "the jobs training p" in O(matches) instead of scanning
// (and copying) every cached pool or job; with a thousand pools a scan per Policy reconcile, and
// one per Dataflow or Secret event, was most of the operator's CPU.
//
//   kPolicyRefIndex    pools: "<ns>/<p>" for each name in spec.policies;
//                      TrainerJobs: "<ns>/<spec.policyRef.name>"
//   kDataflowRefIndex  pools and TrainerJobs: "<ns>/<spec.dataflowRef.name>"
//
// The operator adds them to its RolloutPool and TrainerJob informers (PoolIndexers,
// TrainerJobIndexers). Referencing uses the index when the store has it and otherwise scans
// with the same function, so controllers built on plain informers (tests) behave the same.
//
// Thread safety: pure functions; Referencing reads the informer's thread-safe store.
#pragma once

#include <string>
#include <vector>

#include "kube/indexer.h"

namespace sluice::controllers {

inline constexpr char kPolicyRefIndex[] = "sluice.dev/policy-ref";
inline constexpr char kDataflowRefIndex[] = "sluice.dev/dataflow-ref";

std::vector<std::string> PoolPolicyRefs(const nlohmann::json& pool);
std::vector<std::string> JobPolicyRefs(const nlohmann::json& job);
std::vector<std::string> DataflowRefs(const nlohmann::json& pool_or_job);

kube::Indexers PoolIndexers();        // kPolicyRefIndex and kDataflowRefIndex for pools.
kube::Indexers TrainerJobIndexers();  // The same for TrainerJobs.

// The objects of an informer's `store` that refer to <ns>/<name> through `index`, whose function
// is `refs` (used to scan when the store lacks the index).
std::vector<kube::ObjectPtr> Referencing(const kube::Indexer& store, const std::string& index,
                                         const kube::IndexFunc& refs, const std::string& ns,
                                         const std::string& name);

}  // namespace sluice::controllers
