// End-to-end: the main job (examples/reverse-grpo.yaml, what `make demo` runs), shortened, on
// the local cluster. It proves that:
//   - `sluice run` applies the manifest and the operator runs the real sluice-dataflow,
//     sluice-rollout and sluice-trainer from it (no stand-ins), until the TrainerJob succeeds;
//   - the TrainerJob's spec.warmStart path works: the SFT warm start's weights are announced as
//     version warmStart.steps with evaluate=true, so the Dataflow evaluates them ("before RL"),
//     RL steps publish the versions after it, and `sluice run` waits for the evaluation at the
//     final version and prints the eval line "before -> after";
//   - the Dataflow accounts for every training trajectory: each submitted group is accepted or
//     filtered, each accepted one is trained (in an acknowledged batch), still in an unacknowledged
//     batch, dropped as stale or still buffered, and the trainer acknowledged exactly one batch per
//     RL step, each trained once;
//   - once the job is over and its trainer gone, a replica added to the pool loads the final
//     version from a ready peer and becomes ready, and when every replica is lost at once their
//     replacements load it from the copy the dataflow keeps;
//   - a longer run (300 RL steps, AShortRunOfTheDemoRaisesHeldOutAccuracy), through a deleted
//     replica, a killed dataflow and a restarted control plane, loses and repeats nothing and
//     raises held-out accuracy over the warm-started model by at least 20 points, issue 19's bar
//     (10 of 10 local seeds gained 52 to 95.5 without faults; see kMinGainPoints), with stale
//     drops under 5% of accepted trajectories.
// The example is edited, not copied: if it changes so that an edit no longer applies, the test
// fails naming the edit, instead of silently testing something else than the demo.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/main_job/followed_run.h"
#include "tests/e2e/main_job/injected_faults.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The shortened run (main_job_support.h, ShortRun's defaults).
constexpr ShortRun kShortRun;
constexpr int64_t kSteps = kShortRun.steps;
constexpr int64_t kEvalSamples = kShortRun.eval_samples;
// RL step k publishes version warmStart.steps + k.
constexpr int64_t kFinalVersion = kShortRun.warm_start_steps + kSteps;
// A round comes at the final version only when it is a multiple of everyVersions.
static_assert(kFinalVersion % kShortRun.every_versions == 0);
// The warm start's version is not a multiple: only its evaluate=true announcement queues a round
// there. Rounds at 5, 10, 20 and 30, no more.
static_assert(kShortRun.warm_start_steps % kShortRun.every_versions != 0);
constexpr int64_t kEvalRounds = 1 + kFinalVersion / kShortRun.every_versions;

TEST(MainJobTest, TheDemoManifestTrainsThroughTheOperatorAndAccountsForEveryTrajectory) {
  // The demo's manifest, shortened by exact edits.
  const auto n = [](int64_t v) { return std::to_string(v); };
  const std::vector<Edit> edits = ShortRunEdits(kShortRun);
  std::string manifest;
  ASSERT_TRUE(DemoManifest(edits, &manifest));

  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  // The operator reads the workers' status every second (default 5 s), so the Dataflow shows each
  // evaluation round soon after it completes, the warm start's included, before the next one.
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s")) << cluster.up().output;
  // As a hardened cluster would run it: the operator as its least-privilege ServiceAccount
  // (`sluice up` does that; Down() fails the test on any RBAC refusal) and the experiment in a
  // namespace enforcing the restricted Pod Security profile, so every pod the operator makes
  // must pass it.
  const CommandResult restricted =
      cluster.Kubectl("label namespace default pod-security.kubernetes.io/enforce=restricted");
  ASSERT_EQ(restricted.exit_code, 0) << restricted.output;
  run.Start(cluster, manifest);
  // Exit 0, Succeeded at the final step and version without a gang restart, the accounting.
  ASSERT_NO_FATAL_FAILURE(ExpectFinished(
      cluster, run,
      {.shape = {.steps = kSteps, .eval_rounds = kEvalRounds, .eval_samples = kEvalSamples},
       .version = kFinalVersion}));
  const std::string output = run.Finish().output;
  // The final version was evaluated (a multiple of everyVersions): `sluice run` waited for it.
  // Which round it saw first depends on timing (rounds 5 and 10 finish within a second or two of
  // each other here, and status holds the last round only); that the warm start's round ran is
  // checked below from the dataflow's round count.
  EXPECT_NE(output.find("eval accuracy: before "), std::string::npos) << output;
  EXPECT_NE(output.find(" -> " + n(kFinalVersion) + ")"), std::string::npos)
      << output << Diagnostics(cluster);

  // The Dataflow published a live trajectory rate while it trained (`sluice run` records status
  // every 2 s in progress.jsonl; the operator measures the rate over kTrajectoryRateWindowSeconds).
  int rows_with_rate = 0;
  std::ifstream progress(cluster.state() + "/experiments/" + kExample + "/progress.jsonl");
  for (std::string line; std::getline(progress, line);) {
    const json row = json::parse(line, nullptr, false);
    if (row.is_object() && row.value("trajectoriesPerSecond", 0.0) > 0) ++rows_with_rate;
  }
  EXPECT_GT(rows_with_rate, 0) << "no progress row showed trajectoriesPerSecond > 0";

  // Rank 0 served the final weights until the pool held them (operator/controllers/
  // final_weights.h), then the operator deleted it.
  std::string deleted_ranks;
  EXPECT_TRUE(WaitUntil([&] {
    const json events = cluster.Get(std::string("events --field-selector involvedObject.name=") +
                                    kExample + ",reason=DeletedRanks");
    for (const json& e : events.value("items", json::array()))
      deleted_ranks = e.value("message", "");
    return !deleted_ranks.empty();
  })) << Diagnostics(cluster);
  EXPECT_EQ(deleted_ranks,
            "Deleted the rank pods: the job finished; every rollout pool holds "
            "version " +
                n(kFinalVersion))
      << Diagnostics(cluster);
  // With the trainer gone, a replica added now loads the final version from its ready peer
  // (operator/placement/weight_relays.h) and becomes ready.
  EXPECT_TRUE(WaitUntil([&] {
    return cluster.Get("pods -l app.kubernetes.io/component=trainer")
        .value("items", json::array())
        .empty();
  })) << Diagnostics(cluster);
  const std::string replicas = std::string("sluice.dev/pool=") + kPool;
  const PodFacts first = OnlyPod(cluster, replicas);
  ASSERT_TRUE(first.ready) << Diagnostics(cluster);
  const std::vector<PodFacts> two = ScalePoolAndWait(cluster, 2, std::chrono::seconds(60));
  ASSERT_EQ(two.size(), 2u) << Diagnostics(cluster);
  const PodFacts& joiner = two[0].uid == first.uid ? two[1] : two[0];
  EXPECT_EQ(JoinVersion(cluster, joiner.name), kFinalVersion)
      << cluster.Kubectl("logs " + joiner.name).output;
  // Both replicas lost at once (as with a failed node): no ready peer and no trainer is left,
  // so the replacements load the final version from the copy the dataflow keeps
  // (workers/weights/final_weights.h) and become ready.
  ASSERT_EQ(cluster.Kubectl("delete pods -l " + replicas + " --wait=false").exit_code, 0);
  std::vector<PodFacts> replaced;
  EXPECT_TRUE(WaitUntil(
      [&] {
        replaced = LivePods(cluster, replicas);
        if (replaced.size() != 2) return false;
        for (const PodFacts& p : replaced) {
          if (!p.ready || p.uid == two[0].uid || p.uid == two[1].uid) return false;
        }
        return true;
      },
      std::chrono::seconds(90)))
      << Diagnostics(cluster);
  int from_dataflow = 0;
  for (const PodFacts& p : replaced) {
    EXPECT_EQ(JoinVersion(cluster, p.name), kFinalVersion)
        << cluster.Kubectl("logs " + p.name).output;
    const std::string log = cluster.Kubectl("logs " + p.name).output;
    if (log.find("\"source\":\"dataflow\"") != std::string::npos) ++from_dataflow;
  }
  EXPECT_GE(from_dataflow, 1) << Diagnostics(cluster);

  const json df = cluster.Get(std::string("dataflow ") + kDataflow);
  ASSERT_TRUE(df.is_object()) << Diagnostics(cluster);
  EXPECT_EQ(df.value("/status/evaluation/version"_json_pointer, int64_t{0}), kFinalVersion)
      << df.dump(2);
  // The Dataflow CR mirrors the acknowledged batches as servedBatches (within a status period).
  EXPECT_TRUE(WaitUntil([&] {
    const json d = cluster.Get(std::string("dataflow ") + kDataflow);
    if (!d.is_object()) return false;
    for (const json& p : d.value("/status/policies"_json_pointer, json::array())) {
      if (p.value("name", "") == kPolicy) return p.value("servedBatches", int64_t{-1}) == kSteps;
    }
    return false;
  })) << cluster.Kubectl(std::string("get dataflow ") + kDataflow + " -o yaml").output;

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

// Learning: the demo's recipe, shortened to what CI can afford, must raise held-out accuracy.
// CI runs Policy seed kLearningSeed (SLUICE_LEARNING_SEED picks another). The eval at the warm
// start's version (announced with evaluate=true) is the "before"; the final version's round, the
// "after". Also checks that the staleness budget keeps stale drops under 5% of accepted
// trajectories. The run goes through three faults (a replica deleted, the dataflow killed, the
// control plane restarted), so it also proves that learning survives them, and ends with the
// accounting (main_job_support.h): nothing lost, nothing trained twice, the gang never restarted.
// SLUICE_LEARNING_FAULTS=0 runs it without them, as the ten runs below were.
constexpr int64_t kLearningRlSteps = 300;  // TrainerJob spec.steps (demo: 590).
constexpr int64_t kLearningWarmStart = 60;
constexpr int64_t kLearningFinal = kLearningWarmStart + kLearningRlSteps;
constexpr int64_t kLearningEvalSamples = 400;  // The demo's spec.evaluation.samples.
// Ten local runs (seeds 1-10, 2026-12-01, the warm start's 10-step warm-up; docs/examples.md has
// the distribution) gained 52 to 95.5 points, median 91.7. Before the warm-up, seed 10's warm start
// stalled on the answer's form and gained nothing. The margin is issue 19's acceptance bar: well
// below the smallest gain and far above run-to-run noise (about 2 points on 400 samples). The
// program runs alone under ctest (RUN_SERIAL), as those runs did.
constexpr double kMinGainPoints = 20;
// Seed 3 (+95.5 above) finds the rule well within 300 steps; seed 1, the example's own, is the
// slowest (+52), so CI keeps seed 3.
constexpr char kLearningSeed[] = "3";

TEST(MainJobTest, AShortRunOfTheDemoRaisesHeldOutAccuracy) {
  const char* seed_env = std::getenv("SLUICE_LEARNING_SEED");
  const std::string seed = seed_env != nullptr && *seed_env != '\0' ? seed_env : kLearningSeed;
  const auto n = [](int64_t v) { return std::to_string(v); };
  const std::vector<Edit> edits = {
      // The Policy's seed (the dataset's is "      seed: 3").
      {"\n        seed: 1\n", "\n        seed: " + seed + "\n"},
      // Rounds only at the warm start's version (evaluate=true) and at the final one.
      {"\n    everyVersions: 50\n", "\n    everyVersions: " + n(kLearningFinal) + "\n"},
      {"\n  warmStart:\n    steps: 60\n",
       "\n  warmStart:\n    steps: " + n(kLearningWarmStart) + "\n"},
      {"\n  steps: 590 ", "\n  steps: " + n(kLearningRlSteps) + " "},
  };
  std::string manifest;
  ASSERT_TRUE(DemoManifest(edits, &manifest));

  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s")) << cluster.up().output;
  run.Start(cluster, manifest, "--interval 5 --timeout 900 --eval-wait 180");
  // Learning survives faults: a replica deleted a third of the way through RL, the dataflow
  // killed two thirds of the way, the API server and the operator restarted at five sixths.
  const char* faults_env = std::getenv("SLUICE_LEARNING_FAULTS");
  const bool faults = faults_env == nullptr || std::string(faults_env) != "0";
  if (faults) {
    ASSERT_TRUE(run.ReachVersion(cluster, kLearningWarmStart + kLearningRlSteps / 3, seconds(600)))
        << Diagnostics(cluster);
    ASSERT_NO_FATAL_FAILURE(DeleteAReplica(cluster));
    ASSERT_TRUE(
        run.ReachVersion(cluster, kLearningWarmStart + 2 * kLearningRlSteps / 3, seconds(600)))
        << Diagnostics(cluster);
    ASSERT_NO_FATAL_FAILURE(KillTheDataflow(cluster));
    ASSERT_TRUE(
        run.ReachVersion(cluster, kLearningWarmStart + 5 * kLearningRlSteps / 6, seconds(600)))
        << Diagnostics(cluster);
    ASSERT_NO_FATAL_FAILURE(RestartTheControlPlane(cluster));
  }
  ASSERT_EQ(run.Finish(seconds(960)).exit_code, 0) << run.Finish().output << Diagnostics(cluster);
  // Succeeded at the final version without a gang restart; nothing lost or trained twice.
  ASSERT_NO_FATAL_FAILURE(ExpectFinished(cluster, run,
                                         {.shape = {.steps = kLearningRlSteps,
                                                    .eval_rounds = 2,
                                                    .eval_samples = kLearningEvalSamples,
                                                    .faults = faults},
                                          .version = kLearningFinal}));
  const CommandResult result = run.Finish();

  std::smatch m;
  const std::regex line(
      R"(eval accuracy: before ([0-9.]+)% -> after ([0-9.]+)% \(versions ([0-9]+) -> ([0-9]+)\))");
  ASSERT_TRUE(std::regex_search(result.output, m, line)) << result.output;
  const double before = std::stod(m[1]);
  const double after = std::stod(m[2]);
  EXPECT_EQ(std::stoll(m[3]), kLearningWarmStart) << "\"before\" is the model RL starts from";
  EXPECT_EQ(std::stoll(m[4]), kLearningFinal) << result.output;
  // One line a run, so a loop over seeds can collect the distribution.
  std::cout << "learning: seed " << seed << " before " << before << "% after " << after << "% gain "
            << after - before << " points\n";
  EXPECT_GE(after - before, kMinGainPoints) << result.output;

  const json df = cluster.Get(std::string("dataflow ") + kDataflow);
  ASSERT_TRUE(df.is_object()) << Diagnostics(cluster);
  const int64_t accepted = df.value("/status/accepted"_json_pointer, int64_t{0});
  const int64_t stale = df.value("/status/staleDropped"_json_pointer, int64_t{-1});
  ASSERT_GT(accepted, 0) << df.dump(2);
  ASSERT_GE(stale, 0) << df.dump(2);
  std::cout << "learning: stale-dropped " << stale << " of " << accepted
            << " accepted trajectories\n";
  EXPECT_LT(static_cast<double>(stale), 0.05 * static_cast<double>(accepted)) << df.dump(2);
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
