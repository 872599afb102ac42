// End-to-end: a trainer rank's death during the main job (examples/reverse-grpo.yaml, shortened)
// on the local cluster, with kubectl as the client and the real workers. The run trains with two
// ranks and checkpoints; rank 1 is killed with SIGKILL and the operator restarts the gang from the
// newest checkpoint, the held acknowledgements making the batches trained since then count once
// (docs/dataflow.md, "Held acknowledgements"): the TrainerJob succeeds after exactly spec.steps
// steps and the accounting holds. The faults the other workers and the control plane survive
// (a deleted replica, a killed dataflow, a restarted API server and operator) are injected into
// the learning run (main_job_test.cpp, AShortRunOfTheDemoRaisesHeldOutAccuracy), which must still
// learn.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/main_job/followed_run.h"
#include "tests/e2e/main_job/main_job_support.h"

namespace sluice::e2e {
namespace main_job_faults_test {

using nlohmann::json;
using std::chrono::seconds;

// Rounds only at the warm start's version (evaluate=true) and at the final one.
constexpr int64_t kEvalRounds = 2;

// Two ranks that checkpoint every few steps; the trainer's edit runs after ShortRunEdits, when
// the pool's "replicas: 2" has become 1 and only the TrainerJob's template asks for 2 CPUs.
constexpr ShortRun kRankRun = {.every_versions = 50, .steps = 45};
constexpr int64_t kCheckpointEvery = 5;
constexpr char kCheckpointClaim[] = R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: checkpoints}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 256Mi}}
)";

TEST(MainJobFaultsTest, AKilledTrainerRankRestartsTheGangAndTrainsEveryBatchOnce) {
  std::vector<Edit> edits = ShortRunEdits(kRankRun);
  edits.push_back(
      {"\n  replicas: 1\n  template:\n    resources:\n      cpu: 2\n",
       "\n  replicas: 2\n  checkpoint:\n    everySteps: " + std::to_string(kCheckpointEvery) +
           "\n    pvc: {claimName: checkpoints}\n  template:\n    resources:\n"
           "      cpu: 1\n"});
  std::string manifest;
  ASSERT_TRUE(DemoManifest(edits, &manifest));
  FollowedRun run;  // Before the cluster (followed_run.h).
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s")) << cluster.up().output;
  ASSERT_EQ(cluster.Apply(kCheckpointClaim), 0);
  run.Start(cluster, manifest);

  // Rank 1 dies between checkpoints, halfway through.
  const int64_t fault_at = kRankRun.warm_start_steps + kRankRun.steps / 2 + 2;
  ASSERT_TRUE(run.ReachVersion(cluster, fault_at, seconds(400))) << Diagnostics(cluster);
  const PodFacts rank1 = OnlyPod(cluster, "app.kubernetes.io/component=trainer,sluice.dev/rank=1");
  const pid_t pid = ContainerPid(rank1);
  ASSERT_GT(pid, 1) << Diagnostics(cluster);
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << "kill " << pid;
  std::cerr << "faults: killed trainer rank 1 (pid " << pid << ") at version "
            << TrainerVersion(cluster) << "\n";

  json job;
  ASSERT_NO_FATAL_FAILURE(ExpectFinished(cluster, run,
                                         {.shape = {.steps = kRankRun.steps,
                                                    .eval_rounds = kEvalRounds,
                                                    .eval_samples = kRankRun.eval_samples,
                                                    .faults = true},
                                          .restarts = 1},
                                         &job));
  // The dead run announced up to kCheckpointEvery - 1 versions past the checkpoint the gang
  // resumed from; the resumed weights continue above them (docs/trainer.md, "Version numbers
  // across restarts"), so the final version is that much past the uninterrupted run's.
  const int64_t final_version = job.value("/status/version"_json_pointer, int64_t{0});
  EXPECT_GE(final_version, kRankRun.warm_start_steps + kRankRun.steps) << job.dump(2);
  EXPECT_LE(final_version, kRankRun.warm_start_steps + kRankRun.steps + kCheckpointEvery)
      << job.dump(2);
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace main_job_faults_test
}  // namespace sluice::e2e
