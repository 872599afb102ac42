// End-to-end: elasticity and a node failure during the main job (examples/reverse-grpo.yaml,
// shortened) on the local cluster, with kubectl as the client and the real workers. Mid-run the
// rollout pool is scaled 1 -> 3 with `kubectl scale`; the joiners must load the current weights
// before they lease (their "ready: weights loaded at join" line names a version no older than
// the trainer's at the scale). Then the node agent's simulated failure takes down a node that
// hosts replicas (not the dataflow's): the operator re-creates them on the region's other node.
// Then the pool is scaled 3 -> 1: the leavers are drained (DrainingReplica, DeletedReplica).
// The run must end as if nothing happened: the TrainerJob succeeds at the final version, its gang
// never restarted, and the accounting holds (main_job_support.h). Trajectories/s at 1 and at 3
// replicas are printed for docs/reliability.md.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/main_job/followed_run.h"

namespace sluice::e2e {
namespace main_job_elasticity_test {

using nlohmann::json;
using std::chrono::seconds;

constexpr ShortRun kElasticRun = {.dataset_rows = 4000, .every_versions = 150, .steps = 145};
constexpr int64_t kFinalVersion = kElasticRun.warm_start_steps + kElasticRun.steps;
static_assert(kFinalVersion % kElasticRun.every_versions == 0);
constexpr int64_t kEvalRounds = 2;
constexpr char kRegion[] = "local-eu-west";  // The replicas' region: west-gpu and west-cpu.

// The node agent's fast failure detection, as in OperatorPlacementTest (a failed node is
// Ready=Unknown after 6 s and its pods Failed 1 s later), and 1 s status writes.
constexpr char kFastNodeEnv[] =
    "SLUICE_NODE_HEARTBEAT_INTERVAL=500ms SLUICE_NODE_NODE_MONITOR_GRACE_PERIOD=6s "
    "SLUICE_NODE_POD_EVICTION_TIMEOUT=1s SLUICE_OPERATOR_STATUS_PERIOD=1s";

// The replicas run in region west and the trainer in region east, so that failing a west node
// takes replicas only. Drains may take 10 s.
std::vector<Edit> ElasticEdits() {
  std::vector<Edit> edits = ShortRunEdits(kElasticRun);
  edits.push_back(
      {"\n  template:\n    resources:\n      cpu: 1\n      memory: 1Gi\n",
       std::string("\n  drain: {gracePeriodSeconds: 10}\n  template:\n    nodeSelector: "
                   "{topology.kubernetes.io/region: ") +
           kRegion + "}\n    resources:\n      cpu: 1\n      memory: 1Gi\n"});
  edits.push_back(
      {"\n  replicas: 1\n  template:\n    resources:\n      cpu: 2\n",
       "\n  replicas: 1\n  template:\n    nodeSelector: {topology.kubernetes.io/region: "
       "local-us-east}\n    resources:\n      cpu: 2\n"});
  return edits;
}

// The policy's accepted training trajectories, from the Dataflow's status; -1 when unreadable.
int64_t AcceptedSamples(DataflowApi& api) {
  const json status = api.Status();
  if (!status.is_object()) return -1;
  return status.value(json::json_pointer(std::string("/policies/") + kPolicy + "/accepted_samples"),
                      int64_t{-1});
}

// Trajectories per second the Dataflow accepted over `window`.
double TrajectoriesPerSecond(DataflowApi& api, std::chrono::seconds window) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t a0 = AcceptedSamples(api);
  std::this_thread::sleep_for(window);
  const int64_t a1 = AcceptedSamples(api);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a0 < 0 || a1 < 0) return -1;
  return static_cast<double>(a1 - a0) / dt;
}

// The share of the trainer's last step spent waiting for its batch (status.lastMetrics).
double TrainerDataWait(const SluiceSession& cluster) {
  const json job = cluster.Get(std::string("trainerjob ") + kExample);
  return job.is_object() ? job.value("/status/lastMetrics/dataWaitFraction"_json_pointer, -1.0)
                         : -1.0;
}

// How many events about the pool have this reason.
size_t PoolEvents(const SluiceSession& cluster, const std::string& reason) {
  const json events = cluster.Get(std::string("events --field-selector involvedObject.name=") +
                                  kPool + ",reason=" + reason);
  return events.is_object() ? events.value("items", json::array()).size() : 0;
}

TEST(MainJobElasticityTest, ScalingOneToThreeAndBackAndANodeFailureLoseNothing) {
  std::string manifest;
  ASSERT_TRUE(DemoManifest(ElasticEdits(), &manifest));
  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up(kFastNodeEnv)) << cluster.up().output;
  run.Start(cluster, manifest);
  const std::string replicas = std::string("sluice.dev/pool=") + kPool;
  const seconds window(10);

  // One replica: its throughput once RL runs.
  ASSERT_TRUE(run.ReachVersion(cluster, kElasticRun.warm_start_steps + 3)) << Diagnostics(cluster);
  DataflowApi api;
  api.Connect(cluster);
  ASSERT_TRUE(api.ok());
  const double at_one = TrajectoriesPerSecond(api, window);
  const double wait_at_one = TrainerDataWait(cluster);
  ASSERT_GT(at_one, 0) << api.last_error() << Diagnostics(cluster);
  const std::vector<PodFacts> first = LivePods(cluster, replicas);
  ASSERT_EQ(first.size(), 1u) << Diagnostics(cluster);

  // 1 -> 3: the joiners load the current weights before they lease.
  const int64_t scaled_up_at = TrainerVersion(cluster);
  const std::vector<PodFacts> three = ScalePoolAndWait(cluster, 3, seconds(120));
  ASSERT_EQ(three.size(), 3u) << Diagnostics(cluster);
  std::cerr << "elasticity: 3 replicas ready at version " << TrainerVersion(cluster)
            << " (scaled at " << scaled_up_at << ")\n";
  for (const PodFacts& p : three) {
    if (p.uid == first[0].uid) continue;
    EXPECT_GE(JoinVersion(cluster, p.name), scaled_up_at)
        << p.name << " joined without the current weights\n"
        << cluster.Kubectl("logs " + p.name + " --tail=20").output;
  }
  ASSERT_TRUE(run.StillRunning("the measurement at 3 replicas")) << Diagnostics(cluster);
  const double at_three = TrajectoriesPerSecond(api, window);
  ASSERT_GT(at_three, 0) << api.last_error() << Diagnostics(cluster);
  const double wait_at_three = TrainerDataWait(cluster);
  std::cerr << "elasticity: trajectories/s at 1 replica " << at_one << " (trainer data wait "
            << wait_at_one << "), at 3 replicas " << at_three << " (" << wait_at_three << "), "
            << at_three / at_one << "x\n";

  // A node of the region that hosts replicas and not the dataflow fails; its replicas come back
  // on the region's other node.
  std::map<std::string, int> per_node;
  for (const PodFacts& p : LivePods(cluster, replicas)) ++per_node[p.node];
  for (const PodFacts& p : LivePods(cluster, "app.kubernetes.io/component=dataflow")) {
    per_node.erase(p.node);
  }
  ASSERT_FALSE(per_node.empty()) << "every node with a replica also hosts the dataflow"
                                 << Diagnostics(cluster);
  const std::string failed = per_node.begin()->first;
  const int lost = per_node.begin()->second;
  ASSERT_TRUE(run.StillRunning("the node failure")) << Diagnostics(cluster);
  const auto failed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(
      cluster.Kubectl("annotate node " + failed + " sluice.dev/simulated-failure=true").exit_code,
      0);
  std::cerr << "elasticity: failed node " << failed << " (" << lost << " replicas) at version "
            << TrainerVersion(cluster) << "\n";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<PodFacts> now = LivePods(cluster, replicas);
        if (now.size() != 3) return false;
        for (const PodFacts& p : now) {
          if (!p.ready || p.node == failed) return false;
        }
        return true;
      },
      seconds(120)))
      << Diagnostics(cluster);
  std::cerr << "elasticity: pool whole again after "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - failed_at).count()
            << " s, at version " << TrainerVersion(cluster) << "\n";

  // 3 -> 1: the leavers are drained before they are deleted.
  ASSERT_TRUE(run.StillRunning("the scale-down")) << Diagnostics(cluster);
  const size_t drained_before = PoolEvents(cluster, "DrainingReplica");
  ASSERT_EQ(cluster.Kubectl(std::string("scale rolloutpool ") + kPool + " --replicas=1").exit_code,
            0);
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster.Get("pods -l " + replicas).value("items", json::array()).size() == 1; },
      seconds(120)))
      << Diagnostics(cluster);
  EXPECT_GE(PoolEvents(cluster, "DrainingReplica"), drained_before + 2) << Diagnostics(cluster);
  std::cerr << "elasticity: scaled down to 1 at version " << TrainerVersion(cluster) << "\n";

  ExpectFinished(cluster, run,
                 {.shape = {.steps = kElasticRun.steps,
                            .eval_rounds = kEvalRounds,
                            .eval_samples = kElasticRun.eval_samples,
                            .faults = true},
                  .version = kFinalVersion});
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace main_job_elasticity_test
}  // namespace sluice::e2e
