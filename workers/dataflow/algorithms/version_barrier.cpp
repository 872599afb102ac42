#include "workers/dataflow/algorithms/version_barrier.h"

namespace sluice::dataflow {

Result<BarrierDecision> MayServeNextBatch(
    std::string_view policy, const std::map<std::string, int64_t, std::less<>>& latest_versions,
    bool barrier) {
  auto self = latest_versions.find(policy);
  if (self == latest_versions.end()) {
    return Status::InvalidArgument("unknown policy '" + std::string(policy) + "'", "policy");
  }
  BarrierDecision decision;
  if (!barrier) return decision;
  const int64_t v = self->second;
  std::string behind;
  for (const auto& [name, version] : latest_versions) {
    if (version >= v) continue;
    if (!behind.empty()) behind += ", ";
    behind += name + " at " + std::to_string(version);
  }
  if (!behind.empty()) {
    decision.may_serve = false;
    decision.reason = "version barrier: waiting for " + behind + " to reach " + std::to_string(v);
  }
  return decision;
}

}  // namespace sluice::dataflow
