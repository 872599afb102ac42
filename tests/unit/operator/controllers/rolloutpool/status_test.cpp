// The RolloutPool controller's status mapping (pure functions).
#include "operator/controllers/rolloutpool/status.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace sluice::controllers {
namespace rolloutpool_status_test {

using nlohmann::json;

const Clock::WallTime kT0{std::chrono::seconds(1'800'000'000)};  // 2027-01-15T08:00:00Z
const Clock::WallTime kT1 = kT0 + std::chrono::seconds(60);      // 2027-01-15T08:01:00Z

json Pool() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
    "metadata": {"name": "gen", "namespace": "rl", "uid": "u-pool", "generation": 5},
    "spec": {
      "policies": ["actor", "critic"],
      "dataflowRef": {"name": "arith"},
      "replicas": 4,
      "placement": {"strategy": "Priority", "regions": [
        {"name": "us-east", "priority": 10, "maxReplicas": 3, "gpuType": "H100-80GB"},
        {"name": "eu-west", "priority": 5}]}
    }
  })");
}

json Worker(int64_t actor, int64_t critic, double tps) {
  return {{"in_flight", 3},
          {"draining", false},
          {"drained", false},
          {"policies", json::array({{{"name", "actor"}, {"version", actor}},
                                    {{"name", "critic"}, {"version", critic}}})},
          {"tokens_per_second", tps}};
}

ReplicaObservation Replica(const std::string& region, int index, bool ready,
                           std::optional<json> worker = std::nullopt) {
  ReplicaObservation r;
  r.name = "gen-" + region + "-" + std::to_string(index);
  r.region = region;
  r.index = index;
  r.phase = "Running";
  r.ready = ready;
  r.current = true;
  r.worker_status = std::move(worker);
  return r;
}

ReplicaObservation Unschedulable(const std::string& region, int index) {
  ReplicaObservation r = Replica(region, index, false);
  r.phase = "Pending";
  r.pending_unschedulable = true;
  return r;
}

const std::vector<placement::RegionTarget> kTargets = {{"us-east", 3}, {"eu-west", 1}};

json FindCondition(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  return json();
}

std::vector<api::Condition> Conditions(const json& status) {
  return api::ConditionsFromJson(status["conditions"], "status.conditions").value();
}

TEST(RolloutPoolStatusTest, SelectorNamesThePoolsReplicaPods) {
  EXPECT_EQ(PoolSelector("gen"),
            "app.kubernetes.io/instance=gen,app.kubernetes.io/component=rollout,"
            "sluice.dev/pool=gen");
  const json status = PoolStatus(Pool(), {}, kTargets, 0, {}, kT0);
  EXPECT_EQ(status["selector"], PoolSelector("gen"));
  EXPECT_EQ(status["observedGeneration"], 5);
}

TEST(RolloutPoolStatusTest, CountsReplicasPerRegionInSpecOrder) {
  std::vector<ReplicaObservation> replicas = {
      Replica("us-east", 0, true), Replica("us-east", 1, true), Replica("us-east", 2, false),
      Replica("eu-west", 0, true)};
  replicas[2].phase = "Pending";
  replicas[1].current = false;
  ReplicaObservation leaving = Replica("eu-west", 1, true);
  leaving.draining = true;
  replicas.push_back(leaving);
  const json status = PoolStatus(Pool(), replicas, kTargets, 0, {}, kT0);
  EXPECT_EQ(status["replicas"], 4);  // The draining replica is already leaving.
  EXPECT_EQ(status["readyReplicas"], 3);
  EXPECT_EQ(status["updatedReplicas"], 3);
  EXPECT_EQ(status["regions"], json::parse(R"([
    {"name": "us-east", "replicas": 3, "ready": 2, "pending": 1, "gpuType": "H100-80GB"},
    {"name": "eu-west", "replicas": 1, "ready": 1, "pending": 0}])"));
  EXPECT_FALSE(status.contains("lastScaleTime"));
}

TEST(RolloutPoolStatusTest, RegionsWithoutReplicasAndWithoutPlacement) {
  const json empty = PoolStatus(Pool(), {}, kTargets, 0, {}, kT0);
  EXPECT_EQ(empty["replicas"], 0);
  EXPECT_EQ(empty["regions"], json::parse(R"([
    {"name": "us-east", "replicas": 0, "ready": 0, "pending": 0, "gpuType": "H100-80GB"},
    {"name": "eu-west", "replicas": 0, "ready": 0, "pending": 0}])"));

  json pool = Pool();
  pool["spec"].erase("placement");
  pool["spec"]["replicas"] = 2;
  ReplicaObservation a = Replica("", 0, true);
  ReplicaObservation b = Replica("", 1, false);
  b.phase = "Pending";
  const json status = PoolStatus(pool, {a, b}, {}, 0, {}, kT0);
  EXPECT_EQ(status["regions"], json::parse(R"([
    {"name": "default", "replicas": 2, "ready": 1, "pending": 1}])"));
}

TEST(RolloutPoolStatusTest, PolicyVersionsAreMinOverReadyAndMaxOverAll) {
  ReplicaObservation starting = Replica("eu-west", 0, false, Worker(9, 9, 0.0));
  ReplicaObservation leaving = Replica("us-east", 3, true, Worker(1, 1, 50.0));
  leaving.draining = true;
  const std::vector<ReplicaObservation> replicas = {
      Replica("us-east", 0, true, Worker(7, 3, 100.5)),
      Replica("us-east", 1, true, Worker(6, 4, 200.25)),
      Replica("us-east", 2, true),  // Did not answer.
      starting,
      leaving,
  };
  const json status = PoolStatus(Pool(), replicas, kTargets, 0, {}, kT0);
  // actor: ready, not draining report 7 and 6; the highest anyone reports is 9.
  EXPECT_EQ(status["policies"], json::parse(R"([
    {"name": "actor", "version": 6, "latestVersion": 9},
    {"name": "critic", "version": 3, "latestVersion": 9}])"));
  EXPECT_DOUBLE_EQ(status["tokensPerSecond"].get<double>(), 350.75);
}

TEST(RolloutPoolStatusTest, PolicyVersionsAreOmittedUntilReported) {
  json worker = Worker(2, 0, 10.0);
  worker["policies"] = json::array({{{"name", "actor"}, {"version", 2}},
                                    {{"name", "unknown"}, {"version", 8}},
                                    {{"name", "critic"}}});
  const json status =
      PoolStatus(Pool(), {Replica("us-east", 0, false, worker)}, kTargets, 0, {}, kT0);
  EXPECT_EQ(status["policies"], json::parse(R"([
    {"name": "actor", "latestVersion": 2},
    {"name": "critic"}])"));
  EXPECT_DOUBLE_EQ(status["tokensPerSecond"].get<double>(), 10.0);
  const json none = PoolStatus(Pool(), {}, kTargets, 0, {}, kT0);
  EXPECT_EQ(none["policies"], json::parse(R"([{"name": "actor"}, {"name": "critic"}])"));
  EXPECT_DOUBLE_EQ(none["tokensPerSecond"].get<double>(), 0.0);
}

TEST(RolloutPoolStatusTest, AvailableFollowsReadyReplicas) {
  const json none = PoolStatus(Pool(), {Replica("us-east", 0, false)}, kTargets, 0, {}, kT0);
  const json c0 = FindCondition(none, "Available");
  EXPECT_EQ(c0["status"], "False");
  EXPECT_EQ(c0["reason"], "NoReplicasReady");
  EXPECT_EQ(c0["message"], "0 of 4 replicas ready");
  EXPECT_EQ(c0["observedGeneration"], 5);
  EXPECT_EQ(c0["lastTransitionTime"], "2027-01-15T08:00:00Z");

  const json one =
      PoolStatus(Pool(), {Replica("us-east", 0, true)}, kTargets, 0, Conditions(none), kT1);
  const json c1 = FindCondition(one, "Available");
  EXPECT_EQ(c1["status"], "True");
  EXPECT_EQ(c1["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ(c1["message"], "1 of 4 replicas ready");
  EXPECT_EQ(c1["lastTransitionTime"], "2027-01-15T08:01:00Z");

  // Scaled to zero is available.
  json zero = Pool();
  zero["spec"]["replicas"] = 0;
  const json z = FindCondition(PoolStatus(zero, {}, {}, 0, {}, kT0), "Available");
  EXPECT_EQ(z["status"], "True");
  EXPECT_EQ(z["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ(z["message"], "scaled to zero");

  json single = Pool();
  single["spec"]["replicas"] = 1;
  EXPECT_EQ(FindCondition(PoolStatus(single, {}, {}, 0, {}, kT0), "Available")["message"],
            "0 of 1 replica ready");
}

TEST(RolloutPoolStatusTest, ProgressingWhileScalingRollingOrRebalancing) {
  const json c =
      FindCondition(PoolStatus(Pool(), {Replica("us-east", 0, true), Replica("us-east", 1, true)},
                               kTargets, 0, {}, kT0),
                    "Progressing");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "ScalingReplicaSet");
  EXPECT_EQ(c["message"], "scaling from 2 to 4 replicas");

  std::vector<ReplicaObservation> four = {Replica("us-east", 0, true), Replica("us-east", 1, true),
                                          Replica("us-east", 2, true), Replica("eu-west", 0, true)};
  std::vector<ReplicaObservation> rolling = four;
  rolling[0].current = false;
  rolling[3].current = false;
  const json r = FindCondition(PoolStatus(Pool(), rolling, kTargets, 0, {}, kT0), "Progressing");
  EXPECT_EQ(r["status"], "True");
  EXPECT_EQ(r["reason"], "RollingUpdate");
  EXPECT_EQ(r["message"], "2 of 4 replicas updated");

  // Right count, wrong regions (e.g. after a spill-over, before the replacement exists).
  std::vector<ReplicaObservation> moved = four;
  moved[2] = Replica("eu-west", 1, true);
  const json m = FindCondition(PoolStatus(Pool(), moved, kTargets, 0, {}, kT0), "Progressing");
  EXPECT_EQ(m["status"], "True");
  EXPECT_EQ(m["reason"], "Rebalancing");
  EXPECT_EQ(m["message"],
            "moving replicas between regions: us-east 2 (target 3), eu-west 2 (target 1)");

  const json d = FindCondition(PoolStatus(Pool(), four, kTargets, 0, {}, kT0), "Progressing");
  EXPECT_EQ(d["status"], "False");
  EXPECT_EQ(d["reason"], "NewReplicaSetAvailable");
  EXPECT_EQ(d["message"], "4 replicas up to date");

  // Scaling down: a draining replica no longer counts.
  json three = Pool();
  three["spec"]["replicas"] = 3;
  std::vector<ReplicaObservation> shrinking = four;
  const json s = FindCondition(
      PoolStatus(three, shrinking, {{"us-east", 3}, {"eu-west", 0}}, 0, {}, kT0), "Progressing");
  EXPECT_EQ(s["reason"], "ScalingReplicaSet");
  EXPECT_EQ(s["message"], "scaling from 4 to 3 replicas");
  shrinking[3].draining = true;
  const json done = FindCondition(
      PoolStatus(three, shrinking, {{"us-east", 3}, {"eu-west", 0}}, 0, {}, kT0), "Progressing");
  EXPECT_EQ(done["status"], "False");
  EXPECT_EQ(done["message"], "3 replicas up to date");
}

TEST(RolloutPoolStatusTest, ProgressingTransitionKeepsItsTimeUntilStatusChanges) {
  std::vector<ReplicaObservation> two = {Replica("us-east", 0, true), Replica("us-east", 1, true)};
  const json first = PoolStatus(Pool(), two, kTargets, 0, {}, kT0);
  two.push_back(Replica("us-east", 2, false));
  // Still progressing, new message: the transition time stays.
  const json second = PoolStatus(Pool(), two, kTargets, 0, Conditions(first), kT1);
  const json c = FindCondition(second, "Progressing");
  EXPECT_EQ(c["message"], "scaling from 3 to 4 replicas");
  EXPECT_EQ(c["lastTransitionTime"], "2027-01-15T08:00:00Z");
  two.push_back(Replica("eu-west", 0, true));
  const json third = PoolStatus(Pool(), two, kTargets, 0, Conditions(second), kT1);
  EXPECT_EQ(FindCondition(third, "Progressing")["status"], "False");
  EXPECT_EQ(FindCondition(third, "Progressing")["lastTransitionTime"], "2027-01-15T08:01:00Z");
}

TEST(RolloutPoolStatusTest, RegionDegradedNamesUnschedulableRegionsAndUnplacedReplicas) {
  const std::vector<ReplicaObservation> ok = {
      Replica("us-east", 0, true), Replica("us-east", 1, true), Replica("us-east", 2, true),
      Replica("eu-west", 0, true)};
  const json healthy = PoolStatus(Pool(), ok, kTargets, 0, {}, kT0);
  const json h = FindCondition(healthy, "RegionDegraded");
  EXPECT_EQ(h["status"], "False");
  EXPECT_EQ(h["reason"], "AllReplicasPlaced");

  std::vector<ReplicaObservation> stuck = {Replica("us-east", 0, true), Unschedulable("us-east", 1),
                                           Unschedulable("us-east", 2),
                                           Unschedulable("eu-west", 0)};
  const json degraded = PoolStatus(Pool(), stuck, kTargets, 1, Conditions(healthy), kT1);
  const json d = FindCondition(degraded, "RegionDegraded");
  EXPECT_EQ(d["status"], "True");
  EXPECT_EQ(d["reason"], "ReplicasUnschedulable");
  EXPECT_EQ(d["message"],
            "us-east: 2 of 3 replicas unschedulable; eu-west: 1 of 1 replica unschedulable; "
            "1 replica placed in no region (every region is full)");
  EXPECT_EQ(d["lastTransitionTime"], "2027-01-15T08:01:00Z");
  EXPECT_EQ(degraded["regions"][0]["pending"], 2);

  // Only unplaced replicas.
  const json full = PoolStatus(Pool(), ok, kTargets, 2, {}, kT0);
  const json f = FindCondition(full, "RegionDegraded");
  EXPECT_EQ(f["status"], "True");
  EXPECT_EQ(f["reason"], "InsufficientCapacity");
  EXPECT_EQ(f["message"], "2 replicas placed in no region (every region is full)");

  // A settled pool: every region refused; the settled message wins over the per-region counts.
  placement::ReplicaFacts waiting;
  waiting.name = "pool-eu-west-0";
  waiting.region = "eu-west";
  waiting.pending_unschedulable = true;
  waiting.unscheduled = true;
  const placement::Refusals refused = {
      {"us-east", {100, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu"}},
      {"eu-west", {90, ""}}};
  const std::string why = SettledMessage(refused, {waiting});
  EXPECT_EQ(why,
            "1 replica waits for a node: no placement region has room (refused: eu-west: "
            "Unschedulable; us-east: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu); "
            "they start when the region where they wait has room (change the placement to try "
            "every region again)");
  placement::ReplicaFacts leaving = waiting;
  leaving.draining = true;
  EXPECT_EQ(SettledMessage(refused, {waiting, waiting, leaving}).substr(0, 28),
            "2 replicas wait for a node: ");
  const json settled = PoolStatus(Pool(), stuck, kTargets, 0, Conditions(degraded), kT1, why);
  const json s = FindCondition(settled, "RegionDegraded");
  EXPECT_EQ(s["status"], "True");
  EXPECT_EQ(s["reason"], "InsufficientCapacity");
  EXPECT_EQ(s["message"], why);

  // A draining unschedulable replica (being spilled) no longer degrades its region.
  std::vector<ReplicaObservation> spilled = stuck;
  for (ReplicaObservation& r : spilled) r.draining = r.pending_unschedulable;
  EXPECT_EQ(
      FindCondition(PoolStatus(Pool(), spilled, kTargets, 0, {}, kT0), "RegionDegraded")["status"],
      "False");

  // A region that left the spec is named after the spec regions.
  std::vector<ReplicaObservation> gone = {Unschedulable("ap-south", 0),
                                          Unschedulable("eu-west", 0)};
  EXPECT_EQ(
      FindCondition(PoolStatus(Pool(), gone, kTargets, 0, {}, kT0), "RegionDegraded")["message"],
      "eu-west: 1 of 1 replica unschedulable; ap-south: 1 of 1 replica unschedulable");

  // Without placement the region is "default".
  json pool = Pool();
  pool["spec"].erase("placement");
  EXPECT_EQ(FindCondition(PoolStatus(pool, {Unschedulable("", 0)}, {}, 0, {}, kT0),
                          "RegionDegraded")["message"],
            "default: 1 of 1 replica unschedulable");
}

TEST(RolloutPoolStatusTest, AutoscalerConditionsAndLastScaleTimeAreKept) {
  api::Condition active{"ScalingActive",       "True", "ValidMetricFound", "ok", 4,
                        "2026-01-01T00:00:00Z"};
  api::Condition limited{"ScalingLimited", "True", "TooManyReplicas",
                         "at max",         4,      "2026-01-02T00:00:00Z"};
  json pool = Pool();
  pool["spec"]["autoscaling"] = {{"minReplicas", 1}, {"maxReplicas", 4}};
  pool["status"] = {{"lastScaleTime", "2026-01-02T00:00:00Z"}, {"replicas", 1}};
  const json status = PoolStatus(pool, {}, kTargets, 0, {active, limited}, kT0);
  const std::vector<api::Condition> conditions = Conditions(status);
  ASSERT_EQ(conditions.size(), 5u);
  EXPECT_EQ(conditions[0], active);
  EXPECT_EQ(conditions[1], limited);
  EXPECT_EQ(conditions[2].type, "Available");
  EXPECT_EQ(conditions[3].type, "Progressing");
  EXPECT_EQ(conditions[4].type, "RegionDegraded");
  EXPECT_EQ(status["lastScaleTime"], "2026-01-02T00:00:00Z");

  // The same observation twice gives the same status (the controller writes only changes).
  EXPECT_EQ(PoolStatus(pool, {}, kTargets, 0, conditions, kT1), status);

  // spec.autoscaling removed: the autoscaler's conditions go, the others and lastScaleTime stay.
  pool["spec"].erase("autoscaling");
  const std::vector<api::Condition> after =
      Conditions(PoolStatus(pool, {}, kTargets, 0, conditions, kT1));
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].type, "Available");
  EXPECT_EQ(after[1].type, "Progressing");
  EXPECT_EQ(after[2].type, "RegionDegraded");
}

}  // namespace rolloutpool_status_test
}  // namespace sluice::controllers
