#include "operator/controllers/rolloutpool/status.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/join_strings.h"
#include "operator/controllers/labels.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

struct RegionCounts {
  int64_t replicas = 0;
  int64_t ready = 0;
  int64_t pending = 0;
  int64_t unschedulable = 0;
};

// "1 replica", "3 replicas".
std::string Replicas(int64_t n) { return std::to_string(n) + (n == 1 ? " replica" : " replicas"); }

api::Condition Make(const char* type, bool status, const char* reason, std::string message,
                    int64_t generation) {
  api::Condition c;
  c.type = type;
  c.status = status ? "True" : "False";
  c.reason = reason;
  c.message = std::move(message);
  c.observed_generation = generation;
  return c;
}

}  // namespace

std::string PoolSelector(const std::string& pool) {
  // The replicas' label values (LabelValue: long names are truncated and hashed).
  const std::string value = LabelValue(pool);
  return std::string(kInstanceLabel) + "=" + value + "," + kComponentLabel + "=rollout," +
         kPoolLabel + "=" + value;
}

json PoolStatus(const json& pool, const std::vector<ReplicaObservation>& replicas,
                const std::vector<placement::RegionTarget>& targets, int64_t unplaced,
                const std::vector<api::Condition>& old_conditions, Clock::WallTime now,
                const std::string& settled_message) {
  const std::string name = pool.value("/metadata/name"_json_pointer, "");
  const int64_t generation = pool.value("/metadata/generation"_json_pointer, int64_t{0});
  const int64_t desired = pool.value("/spec/replicas"_json_pointer, int64_t{1});
  const bool placed = pool.contains("/spec/placement/regions"_json_pointer);

  // Spec regions in order (or the one "default" region without placement).
  std::vector<std::string> region_names;
  std::map<std::string, std::string> gpu_types;  // Region -> spec gpuType (informational).
  if (placed) {
    for (const json& r : pool.at("/spec/placement/regions"_json_pointer)) {
      region_names.push_back(r.value("name", ""));
      if (r.contains("gpuType") && r["gpuType"].is_string()) {
        gpu_types[region_names.back()] = r["gpuType"].get<std::string>();
      }
    }
  } else {
    region_names.push_back(kDefaultRegionName);
  }

  int64_t total = 0, ready = 0, updated = 0;
  double tokens_per_second = 0;
  std::map<std::string, RegionCounts> per_region;
  std::map<std::string, int64_t> lowest, highest;  // Policy -> version.
  for (const ReplicaObservation& r : replicas) {
    if (r.worker_status.has_value() && r.worker_status->is_object()) {
      const json& ws = *r.worker_status;
      const json rate = ws.value("tokens_per_second", json(0.0));
      if (rate.is_number() && rate.get<double>() > 0) tokens_per_second += rate.get<double>();
      for (const json& p : ws.value("policies", json::array())) {
        if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
        if (!p.contains("version") || !p["version"].is_number_integer()) continue;
        const std::string policy = p["name"].get<std::string>();
        const int64_t version = p["version"].get<int64_t>();
        auto hi = highest.find(policy);
        if (hi == highest.end() || version > hi->second) highest[policy] = version;
        if (r.ready && !r.draining) {
          auto lo = lowest.find(policy);
          if (lo == lowest.end() || version < lo->second) lowest[policy] = version;
        }
      }
    }
    if (r.draining) continue;
    ++total;
    if (r.ready) ++ready;
    if (r.current) ++updated;
    RegionCounts& rc = per_region[placed ? r.region : kDefaultRegionName];
    ++rc.replicas;
    if (r.ready) ++rc.ready;
    if (r.phase == "Pending") ++rc.pending;
    if (r.pending_unschedulable) ++rc.unschedulable;
  }

  json status = json::object();
  status["replicas"] = total;
  status["readyReplicas"] = ready;
  status["updatedReplicas"] = updated;
  status["selector"] = PoolSelector(name);
  json regions = json::array();
  for (const std::string& region : region_names) {
    const RegionCounts rc = per_region.count(region) ? per_region[region] : RegionCounts{};
    json entry = {
        {"name", region}, {"replicas", rc.replicas}, {"ready", rc.ready}, {"pending", rc.pending}};
    if (auto it = gpu_types.find(region); it != gpu_types.end()) entry["gpuType"] = it->second;
    regions.push_back(std::move(entry));
  }
  status["regions"] = regions;
  json policies = json::array();
  std::set<std::string> seen;
  for (const json& p : pool.value("/spec/policies"_json_pointer, json::array())) {
    if (!p.is_string() || !seen.insert(p.get<std::string>()).second) continue;
    json entry = {{"name", p}};
    if (lowest.count(p.get<std::string>())) entry["version"] = lowest[p.get<std::string>()];
    if (highest.count(p.get<std::string>())) entry["latestVersion"] = highest[p.get<std::string>()];
    policies.push_back(entry);
  }
  status["policies"] = policies;
  status["tokensPerSecond"] = tokens_per_second;
  if (pool.contains("/status/lastScaleTime"_json_pointer)) {
    status["lastScaleTime"] = pool.at("/status/lastScaleTime"_json_pointer);
  }
  status["observedGeneration"] = generation;

  std::vector<api::Condition> conditions = old_conditions;
  if (!pool.contains("/spec/autoscaling"_json_pointer)) {
    std::erase_if(conditions, [](const api::Condition& c) {
      return c.type == "ScalingActive" || c.type == "ScalingLimited";
    });
  }

  // Available.
  const std::string ready_message = std::to_string(ready) + " of " + Replicas(desired) + " ready";
  if (ready >= 1 || desired == 0) {
    api::SetCondition(
        conditions,
        Make("Available", true, "MinimumReplicasAvailable",
             desired == 0 && ready == 0 ? "scaled to zero" : ready_message, generation),
        now);
  } else {
    api::SetCondition(conditions,
                      Make("Available", false, "NoReplicasReady", ready_message, generation), now);
  }

  // Progressing.
  std::vector<std::string> moving;
  if (placed) {
    for (const placement::RegionTarget& t : targets) {
      const int64_t have = per_region.count(t.region) ? per_region[t.region].replicas : 0;
      if (have != t.replicas) {
        moving.push_back(t.region + " " + std::to_string(have) + " (target " +
                         std::to_string(t.replicas) + ")");
      }
    }
  }
  if (updated < total) {
    api::SetCondition(
        conditions,
        Make("Progressing", true, "RollingUpdate",
             std::to_string(updated) + " of " + Replicas(total) + " updated", generation),
        now);
  } else if (total != desired) {
    api::SetCondition(
        conditions,
        Make("Progressing", true, "ScalingReplicaSet",
             "scaling from " + std::to_string(total) + " to " + Replicas(desired), generation),
        now);
  } else if (!moving.empty()) {
    api::SetCondition(
        conditions,
        Make("Progressing", true, "Rebalancing",
             "moving replicas between regions: " + JoinStrings(moving, ", "), generation),
        now);
  } else {
    api::SetCondition(conditions,
                      Make("Progressing", false, "NewReplicaSetAvailable",
                           Replicas(total) + " up to date", generation),
                      now);
  }

  // RegionDegraded: spec regions in order, then regions no longer in the spec by name.
  std::vector<std::string> order = region_names;
  for (const auto& [region, rc] : per_region) {
    if (std::find(order.begin(), order.end(), region) == order.end()) order.push_back(region);
  }
  std::vector<std::string> problems;
  for (const std::string& region : order) {
    if (!per_region.count(region) || per_region[region].unschedulable == 0) continue;
    const RegionCounts& rc = per_region[region];
    problems.push_back(region + ": " + std::to_string(rc.unschedulable) + " of " +
                       Replicas(rc.replicas) + " unschedulable");
  }
  const bool unschedulable = !problems.empty();
  if (unplaced > 0) {
    problems.push_back(Replicas(unplaced) + " placed in no region (every region is full)");
  }
  if (!settled_message.empty()) {
    api::SetCondition(
        conditions,
        Make("RegionDegraded", true, "InsufficientCapacity", settled_message, generation), now);
  } else if (unschedulable) {
    api::SetCondition(conditions,
                      Make("RegionDegraded", true, "ReplicasUnschedulable",
                           JoinStrings(problems, "; "), generation),
                      now);
  } else if (unplaced > 0) {
    api::SetCondition(conditions,
                      Make("RegionDegraded", true, "InsufficientCapacity",
                           JoinStrings(problems, "; "), generation),
                      now);
  } else {
    api::SetCondition(
        conditions,
        Make("RegionDegraded", false, "AllReplicasPlaced",
             "no replica is unschedulable and every replica has a region", generation),
        now);
  }
  status["conditions"] = api::ToJson(conditions);
  return status;
}

std::string SettledMessage(const placement::Refusals& refusals,
                           const std::vector<placement::ReplicaFacts>& replicas) {
  int64_t waiting = 0;
  for (const placement::ReplicaFacts& r : replicas) {
    if (!r.draining && r.pending_unschedulable) ++waiting;
  }
  std::vector<std::string> regions;
  for (const auto& [region, refusal] : refusals) {
    regions.push_back(region + ": " +
                      (refusal.message.empty() ? "Unschedulable" : refusal.message));
  }
  return Replicas(waiting) + (waiting == 1 ? " waits" : " wait") +
         " for a node: no placement region has room (refused: " + JoinStrings(regions, "; ") +
         "); they start when the region where they wait has room (change the placement to try "
         "every region again)";
}

}  // namespace sluice::controllers
