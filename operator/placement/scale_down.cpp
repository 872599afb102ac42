#include "operator/placement/scale_down.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace sluice::placement {
namespace {

// Removal class: lower leaves first.
int RemovalClass(const ReplicaFacts& r) {
  if (r.ready) return 3;
  if (r.pending_unschedulable) return 0;
  if (r.pending_since_seconds.has_value()) return 1;
  return 2;
}

// True when `a` should leave before `b`.
bool LeavesBefore(const ReplicaFacts* a, const ReplicaFacts* b) {
  auto load = [](const ReplicaFacts& r) {
    if (!r.ready) return int64_t{0};  // Load only orders Ready replicas.
    return r.in_flight < 0 ? std::numeric_limits<int64_t>::max() : r.in_flight;
  };
  // Lower class, then lower load, then higher index, then greater name.
  return std::make_tuple(RemovalClass(*a), load(*a), -a->replica_index, b->name) <
         std::make_tuple(RemovalClass(*b), load(*b), -b->replica_index, a->name);
}

}  // namespace

std::vector<std::string> ChooseReplicasToRemove(const std::vector<ReplicaFacts>& replicas,
                                                const std::vector<RegionTarget>& targets) {
  std::map<std::string, int64_t> target_of;
  for (const RegionTarget& t : targets)
    target_of.emplace(t.region, std::max<int64_t>(0, t.replicas));

  // Non-draining replicas by region (std::map: regions gone from the spec come out by name).
  std::map<std::string, std::vector<const ReplicaFacts*>> staying;
  for (const ReplicaFacts& r : replicas) {
    if (!r.draining) staying[r.region].push_back(&r);
  }
  for (auto& [region, list] : staying) std::sort(list.begin(), list.end(), LeavesBefore);

  std::vector<std::string> leaving;
  for (const auto& [region, list] : staying) {
    if (target_of.contains(region)) continue;
    for (const ReplicaFacts* r : list) leaving.push_back(r->name);
  }
  std::set<std::string> done;
  for (const RegionTarget& t : targets) {
    if (!done.insert(t.region).second) continue;  // Duplicate region entry: first one wins.
    auto it = staying.find(t.region);
    if (it == staying.end()) continue;
    const int64_t over = static_cast<int64_t>(it->second.size()) - target_of[t.region];
    for (int64_t k = 0; k < over; ++k) {
      leaving.push_back(it->second[static_cast<size_t>(k)]->name);
    }
  }
  return leaving;
}

std::vector<std::pair<std::string, int>> ReplicasToCreate(
    const std::vector<ReplicaFacts>& replicas, const std::vector<RegionTarget>& targets) {
  std::map<std::string, std::set<int>> used;
  std::map<std::string, int64_t> staying;
  for (const ReplicaFacts& r : replicas) {
    used[r.region].insert(r.replica_index);
    if (!r.draining) ++staying[r.region];
  }
  std::vector<std::pair<std::string, int>> create;
  std::set<std::string> done;
  for (const RegionTarget& t : targets) {
    if (!done.insert(t.region).second) continue;  // Duplicate region entry: first one wins.
    const std::set<int>& in_use = used[t.region];
    int64_t missing = t.replicas - staying[t.region];
    for (int index = 0; missing > 0; ++index) {
      if (in_use.contains(index)) continue;
      create.emplace_back(t.region, index);
      --missing;
    }
  }
  return create;
}

}  // namespace sluice::placement
