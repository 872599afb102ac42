#include "operator/placement/region_targets.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>

namespace sluice::placement {
namespace {

// One region as the apportionment sees it: a relative weight and bounds on its count.
struct Slot {
  int64_t weight = 0;  // >= 0.
  int64_t lo = 0;      // Fewest replicas, <= hi.
  int64_t hi = 0;      // Most replicas.
};

// Shares `total` over `slots` (indices into `all`) in proportion to weight, keeping every slot
// within [lo, hi]; requires sum(lo) <= total <= sum(hi). Exact water-filling: slots whose
// proportional share crosses a bound are pinned to it and the rest re-shared, pinning first the
// side that is certain to stay pinned (the larger violation). The remaining fractional shares are
// settled by largest remainder, ties to the smaller index (the earlier spec region). When every
// unpinned slot has weight 0 they share equally.
void Apportion(int64_t total, const std::vector<Slot>& all, const std::vector<size_t>& slots,
               std::vector<int64_t>* out) {
  std::vector<size_t> free = slots;
  int64_t remaining = total;
  auto weight_of = [&](size_t i, bool equal) { return equal ? int64_t{1} : all[i].weight; };
  while (!free.empty()) {
    int64_t weights = 0;
    for (size_t i : free) weights += all[i].weight;
    const bool equal = weights == 0;
    if (equal) weights = static_cast<int64_t>(free.size());
    // Share of slot i is remaining * w_i / weights; compare numerators over `weights`.
    int64_t excess = 0;   // Sum of (share - hi) over slots above hi, times `weights`.
    int64_t deficit = 0;  // Sum of (lo - share) over slots below lo, times `weights`.
    for (size_t i : free) {
      const int64_t share = remaining * weight_of(i, equal);
      if (share > all[i].hi * weights) excess += share - all[i].hi * weights;
      if (share < all[i].lo * weights) deficit += all[i].lo * weights - share;
    }
    if (excess == 0 && deficit == 0) break;
    const bool pin_high = excess >= deficit;
    const int64_t to_share = remaining;  // `remaining` shrinks as slots are pinned below.
    std::vector<size_t> still_free;
    for (size_t i : free) {
      const int64_t share = to_share * weight_of(i, equal);
      if (pin_high && share > all[i].hi * weights) {
        (*out)[i] = all[i].hi;
      } else if (!pin_high && share < all[i].lo * weights) {
        (*out)[i] = all[i].lo;
      } else {
        still_free.push_back(i);
        continue;
      }
      remaining -= (*out)[i];
    }
    free = std::move(still_free);
  }
  if (free.empty()) return;

  int64_t weights = 0;
  for (size_t i : free) weights += all[i].weight;
  const bool equal = weights == 0;
  if (equal) weights = static_cast<int64_t>(free.size());
  int64_t handed_out = 0;
  std::vector<std::pair<int64_t, size_t>> remainders;  // (remainder, index)
  for (size_t i : free) {
    const int64_t share = remaining * weight_of(i, equal);
    (*out)[i] = share / weights;
    handed_out += (*out)[i];
    remainders.emplace_back(share % weights, i);
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (int64_t k = 0; k < remaining - handed_out; ++k) {
    (*out)[remainders[static_cast<size_t>(k)].second] += 1;
  }
}

// Places min(total, sum hi) replicas over the regions by the strategy; `lo` must sum to at most
// that. Returns the per-region counts in spec order.
std::vector<int64_t> Place(const api::RolloutPoolSpecPlacement& placement, int64_t total,
                           const std::vector<Slot>& slots) {
  std::vector<int64_t> out(slots.size(), 0);
  if (placement.strategy != "Priority") {
    std::vector<size_t> all(slots.size());
    std::iota(all.begin(), all.end(), size_t{0});
    Apportion(total, slots, all, &out);
    return out;
  }
  // Priority levels, highest first; each holds its regions in spec order.
  std::map<int64_t, std::vector<size_t>, std::greater<>> levels;
  for (size_t i = 0; i < slots.size(); ++i) {
    levels[placement.regions[i].priority.value_or(0)].push_back(i);
  }
  int64_t lower_floors = 0;  // Sum of lo over the levels not yet filled.
  for (const Slot& s : slots) lower_floors += s.lo;
  int64_t remaining = total;
  for (const auto& [priority, level] : levels) {
    int64_t level_lo = 0;
    int64_t level_hi = 0;
    for (size_t i : level) {
      level_lo += slots[i].lo;
      level_hi += slots[i].hi;
    }
    lower_floors -= level_lo;
    // Fill this level as far as it goes, leaving what the lower levels must keep.
    const int64_t level_total = std::min(level_hi, remaining - lower_floors);
    Apportion(level_total, slots, level, &out);
    remaining -= level_total;
  }
  return out;
}

// Per-region caps: maxReplicas (unset: no cap), lowered to the placed count when blocked, and
// never above `total` (keeps the arithmetic in range).
std::vector<Slot> Caps(const api::RolloutPoolSpecPlacement& placement, int64_t total,
                       const std::map<std::string, int64_t>& running_in_blocked) {
  std::vector<Slot> slots;
  slots.reserve(placement.regions.size());
  for (const api::RolloutPoolSpecPlacementRegion& r : placement.regions) {
    Slot s;
    s.weight = std::max<int64_t>(r.weight, 0);
    s.hi = std::clamp<int64_t>(r.max_replicas.value_or(total), 0, total);
    if (auto it = running_in_blocked.find(r.name); it != running_in_blocked.end()) {
      s.hi = std::min(s.hi, std::max<int64_t>(it->second, 0));
    }
    slots.push_back(s);
  }
  return slots;
}

PlacementPlan MakePlan(const api::RolloutPoolSpecPlacement& placement, int64_t wanted,
                       int64_t placed_total, const std::vector<int64_t>& counts) {
  PlacementPlan plan;
  plan.unplaced = wanted - placed_total;
  plan.targets.reserve(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    plan.targets.push_back({placement.regions[i].name, counts[i]});
  }
  return plan;
}

int64_t SumHi(const std::vector<Slot>& slots) {
  int64_t sum = 0;
  for (const Slot& s : slots) sum += s.hi;
  return sum;
}

}  // namespace

PlacementPlan DesiredPerRegion(const api::RolloutPoolSpecPlacement& placement, int64_t replicas,
                               const std::map<std::string, int64_t>& running_in_blocked) {
  const int64_t wanted = std::max<int64_t>(replicas, 0);
  const std::vector<Slot> slots = Caps(placement, wanted, running_in_blocked);
  const int64_t total = std::min(wanted, SumHi(slots));
  return MakePlan(placement, wanted, total, Place(placement, total, slots));
}

PlacementPlan DesiredPerRegionSticky(const api::RolloutPoolSpecPlacement& placement,
                                     int64_t replicas,
                                     const std::map<std::string, int64_t>& running_in_blocked,
                                     const std::map<std::string, int64_t>& placed) {
  const int64_t wanted = std::max<int64_t>(replicas, 0);
  std::vector<Slot> slots = Caps(placement, wanted, running_in_blocked);
  const int64_t total = std::min(wanted, SumHi(slots));
  int64_t kept = 0;
  std::vector<int64_t> here(slots.size(), 0);
  for (size_t i = 0; i < slots.size(); ++i) {
    if (auto it = placed.find(placement.regions[i].name); it != placed.end()) {
      here[i] = std::clamp<int64_t>(it->second, 0, slots[i].hi);
    }
    kept += here[i];
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (kept >= total) {
      slots[i].hi = here[i];  // Shrinking (or steady): nobody grows.
    } else {
      slots[i].lo = here[i];  // Growing: nobody shrinks.
    }
  }
  return MakePlan(placement, wanted, total, Place(placement, total, slots));
}

}  // namespace sluice::placement
