#include "operator/placement/spillover.h"

#include <algorithm>

namespace sluice::placement {
namespace {

bool StuckPending(const ReplicaFacts& r, int64_t now_seconds, int64_t spillover_after_seconds) {
  return !r.ready && r.pending_unschedulable && r.pending_since_seconds.has_value() &&
         now_seconds - *r.pending_since_seconds >= spillover_after_seconds;
}

}  // namespace

std::set<std::string> BlockedRegions(const std::vector<ReplicaFacts>& replicas, int64_t now_seconds,
                                     int64_t spillover_after_seconds) {
  std::set<std::string> blocked;
  for (const ReplicaFacts& r : replicas) {
    if (StuckPending(r, now_seconds, spillover_after_seconds)) blocked.insert(r.region);
  }
  return blocked;
}

std::vector<std::string> ReplicasToSpill(const std::vector<ReplicaFacts>& replicas,
                                         int64_t now_seconds, int64_t spillover_after_seconds) {
  std::vector<std::string> names;
  for (const ReplicaFacts& r : replicas) {
    if (!r.draining && StuckPending(r, now_seconds, spillover_after_seconds)) {
      names.push_back(r.name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::map<std::string, int64_t> PlacedPerRegion(const std::vector<ReplicaFacts>& replicas) {
  std::map<std::string, int64_t> placed;
  for (const ReplicaFacts& r : replicas) {
    if (!r.draining && (r.ready || !r.pending_unschedulable)) ++placed[r.region];
  }
  return placed;
}

std::map<std::string, int64_t> RunningInBlocked(const std::vector<ReplicaFacts>& replicas,
                                                const std::set<std::string>& blocked) {
  std::map<std::string, int64_t> running;
  for (const std::string& region : blocked) running[region] = 0;
  for (const auto& [region, count] : PlacedPerRegion(replicas)) {
    if (blocked.contains(region)) running[region] = count;
  }
  return running;
}

}  // namespace sluice::placement
