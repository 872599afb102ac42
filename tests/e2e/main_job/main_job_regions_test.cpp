// End-to-end: the main job (examples/reverse-grpo.yaml, shortened) across the two regions of the
// local cluster, with the real Prometheus scraping the workers. The rollout pool wants 3 GPU
// replicas with region east preferred (Priority); east has 2 GPUs, so one replica spills over
// into west, where the trainer runs. Each region's relay (its lowest ready replica) fetches every
// new version from the trainer; the other east replica fetches from its relay. The per-region
// sums of sluice_rollout_weight_fetch_bytes_total{source} prove it: east, a region away from the
// trainer, fetched each version from the trainer about once, not once per replica. The run then
// ends as any other (Succeeded, the accounting of main_job_support.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/main_job/followed_run.h"
#include "tests/e2e/main_job/metrics_queries.h"
#include "tests/support/free_port.h"

namespace sluice::e2e {
namespace main_job_regions_test {

using nlohmann::json;
using std::chrono::seconds;

constexpr ShortRun kRegionRun = {
    .dataset_rows = 4000, .every_versions = 100, .steps = 95, .rollout_replicas = 3};
constexpr int64_t kFinalVersion = kRegionRun.warm_start_steps + kRegionRun.steps;
static_assert(kFinalVersion % kRegionRun.every_versions == 0);
constexpr int64_t kEvalRounds = 2;

// GPU replicas, east first; the trainer in west (the test cluster: east-gpu has 2 GPUs, west-gpu
// 1).
std::vector<Edit> RegionEdits() {
  std::vector<Edit> edits = ShortRunEdits(kRegionRun);
  edits.push_back(
      {"\n  template:\n    resources:\n      cpu: 1\n      memory: 1Gi\n",
       "\n  template:\n    resources:\n      cpu: 1\n      memory: 1Gi\n      gpus: 1\n"});
  edits.push_back({"\n  replicas: 3\n---\n",
                   "\n  replicas: 3\n  placement:\n    strategy: Priority\n"
                   "    spilloverAfterSeconds: 2\n    regions:\n"
                   "      - name: east\n"
                   "        nodeSelector: {topology.kubernetes.io/region: local-us-east}\n"
                   "        priority: 10\n"
                   "      - name: west\n"
                   "        nodeSelector: {topology.kubernetes.io/region: local-eu-west}\n"
                   "        priority: 1\n---\n"});
  edits.push_back(
      {"\n  replicas: 1\n  template:\n    resources:\n      cpu: 2\n",
       "\n  replicas: 1\n  template:\n    nodeSelector: {topology.kubernetes.io/region: "
       "local-eu-west}\n    resources:\n      cpu: 2\n"});
  return edits;
}

TEST(MainJobRegionsTest, ASpilledPoolFetchesEachVersionAcrossRegionsOnceThroughItsRelay) {
  ASSERT_TRUE(HavePrometheus());
  std::string manifest;
  ASSERT_TRUE(DemoManifest(RegionEdits(), &manifest));
  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  const int prometheus_port = test_support::FreePort();
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s", PrometheusFlags(prometheus_port)))
      << cluster.up().output;
  run.Start(cluster, manifest);
  const std::string replicas = std::string("sluice.dev/pool=") + kPool;

  // Two replicas in east, the third spilled over into west, all ready while the trainer runs.
  std::map<std::string, int> per_region;
  ASSERT_TRUE(WaitUntil(
      [&] {
        per_region.clear();
        const json pods = cluster.Get("pods -l " + replicas);
        for (const json& p : pods.value("items", json::array())) {
          bool ready = false;
          for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
            if (c.value("type", "") == "Ready") ready = c.value("status", "") == "True";
          }
          if (ready) ++per_region[p.value("/metadata/labels/sluice.dev~1region"_json_pointer, "")];
        }
        return !run.running() || (per_region["east"] == 2 && per_region["west"] == 1);
      },
      seconds(120)))
      << Diagnostics(cluster);
  ASSERT_TRUE(run.StillRunning("the pool was placed")) << Diagnostics(cluster);
  std::cerr << "regions: 2 replicas in east, 1 spilled into west at version "
            << TrainerVersion(cluster) << "\n";
  const json spilled = cluster.Get(std::string("events --field-selector involvedObject.name=") +
                                   kPool + ",reason=SpilledOver");
  EXPECT_FALSE(spilled.value("items", json::array()).empty()) << Diagnostics(cluster);

  ASSERT_NO_FATAL_FAILURE(ExpectFinished(cluster, run,
                                         {.shape = {.steps = kRegionRun.steps,
                                                    .eval_rounds = kEvalRounds,
                                                    .eval_samples = kRegionRun.eval_samples},
                                          .version = kFinalVersion}));

  // Bytes fetched per region and source, once Prometheus has scraped the final counters (every
  // replica holds the final version: the trainer served it until then).
  const std::string promql = std::string(
                                 "sum by (region, source) "
                                 "(sluice_rollout_weight_fetch_bytes_total{pool=\"") +
                             kPool + "\"})";
  std::map<std::string, double> bytes;  // "region/source" -> bytes.
  std::string error;
  auto key = [](const json& m) {
    return m.value("region", std::string()) + "/" + m.value("source", std::string());
  };
  double west_trainer = 0, east_trainer = 0, east_relay = 0;
  // West's single replica fetched every version from the trainer; east's two fetched them from
  // the trainer once (the relay) and from the relay otherwise. Wait for the last scrapes.
  ASSERT_TRUE(WaitUntil(
      [&] {
        bytes.clear();
        for (const auto& [labels, value] : PrometheusQuery(prometheus_port, promql, &error)) {
          bytes[key(labels)] = value;
        }
        west_trainer = bytes["west/trainer"];
        east_trainer = bytes["east/trainer"];
        east_relay = bytes["east/relay"];
        return west_trainer > 0 && east_relay > 0 &&
               PrometheusQuery(
                   prometheus_port,
                   std::string("min(sluice_rollout_policy_version{pool=\"") + kPool + "\"})",
                   &error)
                       .size() == 1;
      },
      seconds(30)))
      << error << "\n"
      << json(bytes).dump();
  std::cerr << "regions: weight bytes fetched: west from the trainer " << west_trainer
            << ", east from the trainer (across regions) " << east_trainer
            << ", east from its relay " << east_relay << " (" << east_trainer / west_trainer
            << "x west's)\n";
  // Without the relay east would fetch about twice what west does; with it, once plus the
  // second replica's first image (its join, before a relay is named).
  EXPECT_LT(east_trainer, 1.3 * west_trainer) << json(bytes).dump();
  EXPECT_GT(east_relay, 0.5 * west_trainer) << json(bytes).dump();
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace main_job_regions_test
}  // namespace sluice::e2e
