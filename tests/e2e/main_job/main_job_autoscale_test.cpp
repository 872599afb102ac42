// End-to-end: the autoscaler scales a training run's rollout pool from the real Prometheus
// (`sluice up --prometheus`, scraping the real workers every second) with the example queries of
// examples/gpu-cluster-qwen3.yaml: the Dataflow's rollout demand and the share of time the
// trainer waits for data. The run is the main job (examples/reverse-grpo.yaml, shortened), one
// replica to start. Mid-run the replica stalls (SIGSTOP, a straggler): its leased work stays
// pending and the trainer waits, and the pool must grow to its maximum while the stall lasts. Once
// the replica resumes (SIGCONT) the trainer stops waiting, and the pool must shrink back to its
// minimum after the scale-down stabilisation window, still during the run. The decisions show as
// ScaledUp/ScaledDown events and in the operator's sluice_autoscaler_* metrics; the run ends as if
// nothing happened (TrainerJob succeeded, accounting of main_job_support.h).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/main_job/followed_run.h"
#include "tests/e2e/main_job/metrics_queries.h"
#include "tests/support/free_port.h"

namespace sluice::e2e {
namespace main_job_autoscale_test {

using nlohmann::json;
using std::chrono::seconds;

// 145 steps of 16 groups need more prompts than the short runs' 2000 rows give over 2 epochs.
constexpr ShortRun kAutoscaleRun = {.dataset_rows = 4000, .every_versions = 150, .steps = 145};
constexpr int64_t kFinalVersion = kAutoscaleRun.warm_start_steps + kAutoscaleRun.steps;
static_assert(kFinalVersion % kAutoscaleRun.every_versions == 0);
constexpr int64_t kEvalRounds = 2;
constexpr int kMaxReplicas = 3;

// The pool autoscales between 1 and kMaxReplicas on the example's two queries, re-deciding every
// second; it shrinks only after 10 s below target. Prometheus is the operator's default, the one
// `sluice up --prometheus` started.
std::vector<Edit> AutoscaleEdits() {
  std::vector<Edit> edits = ShortRunEdits(kAutoscaleRun);
  edits.push_back({"\n  replicas: 1\n---\n",
                   "\n  replicas: 1\n  drain: {gracePeriodSeconds: 10}\n  autoscaling:\n"
                   "    minReplicas: 1\n    maxReplicas: " +
                       std::to_string(kMaxReplicas) +
                       "\n    syncPeriodSeconds: 1\n    scaleDownStabilizationSeconds: 10\n"
                       "    metrics:\n"
                       "      - name: backlog\n"
                       "        query: sum(sluice_dataflow_rollout_demand{namespace=\"$namespace\","
                       "dataflow=\"digits\"})\n"
                       "        targetPerReplica: 16\n"
                       "      - name: trainer-wait\n"
                       "        query: avg(rate(sluice_trainer_data_wait_seconds_total{namespace="
                       "\"$namespace\",policy=\"rev\"}[5s]))\n"
                       "        targetPerReplica: 0.1\n---\n"});
  return edits;
}

std::string PoolSeries(const std::string& name, const std::string& extra = "") {
  return name + "{namespace=\"default\",pool=\"" + kPool + "\"" + extra + "}";
}

// The pool's events with this reason, messages in order.
std::vector<std::string> PoolEventMessages(const SluiceSession& cluster,
                                           const std::string& reason) {
  const json events = cluster.Get(std::string("events --field-selector involvedObject.name=") +
                                  kPool + ",reason=" + reason);
  std::vector<std::string> out;
  for (const json& e : events.value("items", json::array())) out.push_back(e.value("message", ""));
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out;
}

TEST(MainJobAutoscaleTest, AStalledReplicaScalesThePoolUpAndItsRecoveryScalesItDown) {
  ASSERT_TRUE(HavePrometheus());
  std::string manifest;
  ASSERT_TRUE(DemoManifest(AutoscaleEdits(), &manifest));
  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  ASSERT_TRUE(
      cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s", PrometheusFlags(test_support::FreePort())))
      << cluster.up().output;
  run.Start(cluster, manifest);
  const std::string replicas = std::string("sluice.dev/pool=") + kPool;
  auto pool_size = [&] {
    const json pool = cluster.Get(std::string("rolloutpool ") + kPool);
    return pool.is_object() ? pool.value("/spec/replicas"_json_pointer, int64_t{-1}) : -1;
  };
  auto live_replicas = [&] { return static_cast<int64_t>(LivePods(cluster, replicas).size()); };

  // RL under way with one replica (the start may have scaled up and back already).
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !run.running() || (TrainerVersion(cluster) >= kAutoscaleRun.warm_start_steps + 10 &&
                                  pool_size() == 1 && live_replicas() == 1);
      },
      seconds(300)))
      << Diagnostics(cluster) << OperatorMetrics(cluster);
  ASSERT_TRUE(run.StillRunning("the stall")) << Diagnostics(cluster);
  const size_t ups_before = PoolEventMessages(cluster, "ScaledUp").size();
  const size_t downs_before = PoolEventMessages(cluster, "ScaledDown").size();

  // The replica stalls: the trainer waits and the pool grows to its maximum.
  const PodFacts stalled = OnlyPod(cluster, replicas);
  const pid_t pid = ContainerPid(stalled);
  ASSERT_GT(pid, 1) << Diagnostics(cluster);
  const int64_t stalled_at = TrainerVersion(cluster);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0) << "kill -STOP " << pid;
  const auto t0 = std::chrono::steady_clock::now();
  const bool grew = WaitUntil([&] { return pool_size() == kMaxReplicas; }, seconds(60));
  const double grew_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string metrics_when_grown = OperatorMetrics(cluster);
  ::kill(pid, SIGCONT);
  ASSERT_TRUE(grew) << "the pool did not grow while its replica was stalled\n"
                    << OperatorMetrics(cluster) << Diagnostics(cluster);
  std::cerr << "autoscale: stalled " << stalled.name << " at version " << stalled_at
            << "; the pool grew to " << kMaxReplicas << " after " << grew_after << " s (version "
            << TrainerVersion(cluster) << "), trainer-wait "
            << Sample(metrics_when_grown,
                      PoolSeries("sluice_autoscaler_metric_value", ",metric=\"trainer-wait\""))
            << "\n";
  const std::vector<std::string> ups = PoolEventMessages(cluster, "ScaledUp");
  ASSERT_GT(ups.size(), ups_before) << Diagnostics(cluster);
  EXPECT_NE(ups.back().find("New size: 3; reason: "), std::string::npos) << Joined(ups);
  std::cerr << "autoscale: " << ups.back() << "\n";

  // It resumed: the trainer no longer waits, and after the stabilisation window the pool
  // shrinks back to one replica, before the run ends.
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil(
      [&] { return !run.running() || (pool_size() == 1 && live_replicas() == 1); }, seconds(180)))
      << OperatorMetrics(cluster) << Diagnostics(cluster);
  ASSERT_TRUE(run.StillRunning("the pool shrank"))
      << OperatorMetrics(cluster) << Diagnostics(cluster);
  const double shrank_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::cerr << "autoscale: back to 1 replica " << shrank_after
            << " s after the stall ended (version " << TrainerVersion(cluster) << ")\n";
  EXPECT_GE(shrank_after, 10.0) << "shrank within the 10 s stabilisation window";
  const std::vector<std::string> downs = PoolEventMessages(cluster, "ScaledDown");
  ASSERT_GT(downs.size(), downs_before) << Diagnostics(cluster);
  EXPECT_NE(downs.back().find("New size: 1; reason: All metrics below target"), std::string::npos)
      << Joined(downs);

  // The decisions in the operator's metrics.
  const std::string metrics = OperatorMetrics(cluster);
  EXPECT_GE(
      Sample(metrics, PoolSeries("sluice_autoscaler_scale_events_total", ",direction=\"up\"")), 1)
      << metrics;
  EXPECT_GE(
      Sample(metrics, PoolSeries("sluice_autoscaler_scale_events_total", ",direction=\"down\"")), 1)
      << metrics;
  EXPECT_EQ(Sample(metrics, PoolSeries("sluice_autoscaler_desired_replicas")), 1) << metrics;

  ExpectFinished(cluster, run,
                 {.shape = {.steps = kAutoscaleRun.steps,
                            .eval_rounds = kEvalRounds,
                            .eval_samples = kAutoscaleRun.eval_samples,
                            .faults = true},
                  .version = kFinalVersion});
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace main_job_autoscale_test
}  // namespace sluice::e2e
