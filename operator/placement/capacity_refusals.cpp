#include "operator/placement/capacity_refusals.h"

#include <algorithm>
#include <set>

#include "operator/placement/scale_down.h"

namespace sluice::placement {

Refusals RememberRefusals(const Refusals& remembered, const std::vector<ReplicaFacts>& replicas,
                          int64_t desired, int64_t now_seconds, int64_t spillover_after_seconds) {
  int64_t held = 0;
  bool all_ready = true;
  for (const ReplicaFacts& r : replicas) {
    if (r.draining) continue;
    ++held;
    all_ready = all_ready && r.ready;
  }
  if (held == desired && all_ready) return {};
  Refusals refusals = remembered;
  const std::set<std::string> blocked =
      BlockedRegions(replicas, now_seconds, spillover_after_seconds);
  // The first stuck replica by name speaks for its region, so the message is stable.
  std::vector<const ReplicaFacts*> by_name;
  for (const ReplicaFacts& r : replicas) by_name.push_back(&r);
  std::sort(by_name.begin(), by_name.end(),
            [](const ReplicaFacts* a, const ReplicaFacts* b) { return a->name < b->name; });
  for (const std::string& region : blocked) {
    auto [it, added] = refusals.try_emplace(region, Refusal{now_seconds, "", 0});
    for (const ReplicaFacts* r : by_name) {
      if (r->region == region && r->pending_unschedulable && !r->scheduler_message.empty()) {
        it->second.message = r->scheduler_message;
        break;
      }
    }
  }
  const std::map<std::string, int64_t> placed = PlacedPerRegion(replicas);
  for (auto& [region, refusal] : refusals) {
    if (auto it = placed.find(region); it != placed.end()) {
      refusal.placed = std::max(refusal.placed, it->second);
    }
  }
  return refusals;
}

SpilloverPlan PlanWithRefusals(const api::RolloutPoolSpecPlacement& placement, int64_t replicas,
                               const std::vector<ReplicaFacts>& facts, const Refusals& refusals) {
  SpilloverPlan out;
  if (placement.strategy != "Priority" || refusals.empty()) {
    out.plan = DesiredPerRegionSticky(placement, replicas, {}, PlacedPerRegion(facts));
    return out;
  }
  std::set<std::string> blocked;
  for (const auto& [region, refusal] : refusals) blocked.insert(region);
  std::map<std::string, int64_t> caps = RunningInBlocked(facts, blocked);
  for (const auto& [region, refusal] : refusals) {
    caps[region] = std::max(caps[region], refusal.placed);
  }
  out.plan = DesiredPerRegionSticky(placement, replicas, caps, PlacedPerRegion(facts));
  if (out.plan.unplaced > 0) {
    // Replicas that fit nowhere: rather than deleting stuck replicas only to find no region for
    // them, keep that many where they wait, in the regions the strategy prefers first (higher
    // priority, then spec order).
    std::vector<const api::RolloutPoolSpecPlacementRegion*> order;
    for (const api::RolloutPoolSpecPlacementRegion& r : placement.regions) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      return a->priority.value_or(0) > b->priority.value_or(0);
    });
    int64_t to_park = out.plan.unplaced;
    for (const api::RolloutPoolSpecPlacementRegion* r : order) {
      if (to_park == 0 || !blocked.contains(r->name)) continue;
      int64_t stuck = 0;
      for (const ReplicaFacts& f : facts) {
        if (f.region == r->name && !f.draining && !f.ready && f.pending_unschedulable) ++stuck;
      }
      const int64_t parked = std::min(stuck, to_park);
      caps[r->name] += parked;
      to_park -= parked;
      if (parked > 0) out.settled = true;
    }
    if (out.settled) {
      out.plan = DesiredPerRegionSticky(placement, replicas, caps, PlacedPerRegion(facts));
    }
  }
  // Spilled: the Unschedulable replicas of a refused region that the plan removes from it while
  // it adds replicas elsewhere (removed with nothing added is a scale-down). The region's refusal
  // is what moves them, so a replica refused a second later than its neighbour moves with it.
  if (ReplicasToCreate(facts, out.plan.targets).empty()) return out;
  for (const std::string& name : ChooseReplicasToRemove(facts, out.plan.targets)) {
    for (const ReplicaFacts& f : facts) {
      if (f.name == name && blocked.contains(f.region) && !f.ready && f.pending_unschedulable) {
        out.spill.push_back(name);
      }
    }
  }
  std::sort(out.spill.begin(), out.spill.end());
  return out;
}

}  // namespace sluice::placement
