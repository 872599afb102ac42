// End-to-end: faults during the main job (examples/reverse-grpo.yaml, shortened) on the local
// cluster, with kubectl as the client and the real workers. Mid-run, `kubectl delete pod` takes
// the rollout replica away, then the dataflow's process is killed with SIGKILL inside its pod,
// then the API server and the operator are killed and started again.
// The run must finish as if nothing happened: the operator re-creates the replica, the node
// agent restarts the dataflow's container, which recovers its buffers, leases and counters from
// its write-ahead log on the claim, the TrainerJob succeeds at the final version, and the
// accounting holds: no accepted trajectory lost, every RL step trained exactly one batch, none
// twice. A second run trains with two ranks and checkpoints; rank 1 is killed with SIGKILL and
// the operator restarts the gang from the newest checkpoint, the held acknowledgements making
// the batches trained since then count once (docs/dataflow.md, "Held acknowledgements").
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/main_job/main_job_support.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Long enough for two faults and a recovery from each; rounds only at the warm start's version
// (evaluate=true) and at the final one.
constexpr ShortRun kFaultRun = {.every_versions = 50, .steps = 45};
constexpr int64_t kFinalVersion = kFaultRun.warm_start_steps + kFaultRun.steps;
static_assert(kFinalVersion % kFaultRun.every_versions == 0);
constexpr int64_t kEvalRounds = 2;

TEST(MainJobFaultsTest, ADeletedReplicaAKilledDataflowAndARestartedControlPlaneLoseNothing) {
  std::string manifest;
  ASSERT_TRUE(DemoManifest(ShortRunEdits(kFaultRun), &manifest));
  // Declared before the cluster, so that a failed assertion stops the cluster first and the
  // `sluice run` it waits for then ends at once.
  std::future<CommandResult> run;
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s")) << cluster.up().output;
  const std::string manifest_file = cluster.dir() + "/" + kExample + ".yaml";
  std::ofstream(manifest_file) << manifest;
  const std::string command = BinDir() + "/sluice run " + manifest_file + " --state-dir " +
                              cluster.state() + " --interval 2 --timeout 600 --eval-wait 120";
  run = std::async(std::launch::async, [command] { return RunShell(command); });
  auto running = [&] { return run.wait_for(seconds(0)) != std::future_status::ready; };
  const std::string replica_selector = std::string("sluice.dev/pool=") + kPool;
  const std::string dataflow_selector = "app.kubernetes.io/component=dataflow";

  // Fault 1: the rollout replica is deleted a third of the way in.
  const int64_t first_fault_at = kFaultRun.warm_start_steps + kFaultRun.steps / 3;
  ASSERT_TRUE(WaitUntil([&] { return !running() || TrainerVersion(cluster) >= first_fault_at; },
                        seconds(300)))
      << Diagnostics(cluster);
  ASSERT_TRUE(running()) << "the run ended before the first fault: " << run.get().output
                         << Diagnostics(cluster);
  const PodFacts replica = OnlyPod(cluster, replica_selector);
  ASSERT_FALSE(replica.name.empty()) << Diagnostics(cluster);
  const CommandResult deleted = cluster.Kubectl("delete pod " + replica.name + " --wait=false");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  std::cerr << "faults: deleted " << replica.name << " at version " << TrainerVersion(cluster)
            << "\n";
  PodFacts replacement;
  ASSERT_TRUE(WaitUntil(
      [&] {
        replacement = OnlyPod(cluster, replica_selector);
        return replacement.ready && replacement.uid != replica.uid;
      },
      seconds(120)))
      << Diagnostics(cluster);

  // Fault 2: the dataflow's process dies by SIGKILL two thirds of the way in.
  const int64_t second_fault_at = kFaultRun.warm_start_steps + 2 * kFaultRun.steps / 3;
  ASSERT_TRUE(WaitUntil([&] { return !running() || TrainerVersion(cluster) >= second_fault_at; },
                        seconds(300)))
      << Diagnostics(cluster);
  ASSERT_TRUE(running()) << "the run ended before the second fault: " << run.get().output
                         << Diagnostics(cluster);
  const PodFacts dataflow = OnlyPod(cluster, dataflow_selector);
  ASSERT_EQ(dataflow.container_id.rfind("sluice://", 0), 0u) << Diagnostics(cluster);
  const pid_t pid = std::stoi(dataflow.container_id.substr(9));
  ASSERT_GT(pid, 1);
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << "kill " << pid;
  std::cerr << "faults: killed the dataflow (pid " << pid << ") at version "
            << TrainerVersion(cluster) << "\n";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const PodFacts now = OnlyPod(cluster, dataflow_selector);
        return now.restarts > dataflow.restarts && now.ready;
      },
      seconds(120)))
      << Diagnostics(cluster);
  EXPECT_EQ(OnlyPod(cluster, dataflow_selector).uid, dataflow.uid)
      << "the container restarted in place; the pod was not replaced";

  // Fault 3: the API server and the operator die together and come back (on the same ports and
  // storage); the workers go on without them meanwhile.
  const int64_t third_fault_at = kFaultRun.warm_start_steps + 5 * kFaultRun.steps / 6;
  ASSERT_TRUE(WaitUntil([&] { return !running() || TrainerVersion(cluster) >= third_fault_at; },
                        seconds(300)))
      << Diagnostics(cluster);
  ASSERT_TRUE(running()) << "the run ended before the third fault: " << run.get().output
                         << Diagnostics(cluster);
  const CommandResult restarted = cluster.KillAndRestart({"apiserver", "operator"});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output << Diagnostics(cluster);
  std::cerr << "faults: restarted the API server and the operator at version "
            << TrainerVersion(cluster) << "\n";

  ASSERT_EQ(run.wait_for(seconds(660)), std::future_status::ready) << Diagnostics(cluster);
  const CommandResult result = run.get();
  ASSERT_EQ(result.exit_code, 0) << result.output << Diagnostics(cluster);

  const json job = cluster.Get(std::string("trainerjob ") + kExample);
  ASSERT_TRUE(job.is_object()) << Diagnostics(cluster);
  EXPECT_EQ(job.value("/status/phase"_json_pointer, ""), "Succeeded") << job.dump(2);
  EXPECT_EQ(job.value("/status/version"_json_pointer, int64_t{0}), kFinalVersion) << job.dump(2);
  EXPECT_EQ(job.value("/status/step"_json_pointer, int64_t{0}), kFaultRun.steps) << job.dump(2);
  // None of the faults restarted the trainer's gang: it waited for the dataflow.
  EXPECT_EQ(job.value("/status/restarts"_json_pointer, int64_t{-1}), 0) << job.dump(2);
  ExpectAccountingOnceSettled(cluster, {.steps = kFaultRun.steps,
                                        .eval_rounds = kEvalRounds,
                                        .eval_samples = kFaultRun.eval_samples,
                                        .faults = true});
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

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
  std::future<CommandResult> run;  // Before the cluster: see the test above.
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=1s")) << cluster.up().output;
  ASSERT_EQ(cluster.Apply(kCheckpointClaim), 0);
  const std::string manifest_file = cluster.dir() + "/" + kExample + ".yaml";
  std::ofstream(manifest_file) << manifest;
  const std::string command = BinDir() + "/sluice run " + manifest_file + " --state-dir " +
                              cluster.state() + " --interval 2 --timeout 600 --eval-wait 120";
  run = std::async(std::launch::async, [command] { return RunShell(command); });
  auto running = [&] { return run.wait_for(seconds(0)) != std::future_status::ready; };

  // Rank 1 dies between checkpoints, halfway through.
  const int64_t fault_at = kRankRun.warm_start_steps + kRankRun.steps / 2 + 2;
  ASSERT_TRUE(
      WaitUntil([&] { return !running() || TrainerVersion(cluster) >= fault_at; }, seconds(400)))
      << Diagnostics(cluster);
  ASSERT_TRUE(running()) << "the run ended before the fault: " << run.get().output
                         << Diagnostics(cluster);
  const std::string rank1_selector = "app.kubernetes.io/component=trainer,sluice.dev/rank=1";
  const PodFacts rank1 = OnlyPod(cluster, rank1_selector);
  ASSERT_EQ(rank1.container_id.rfind("sluice://", 0), 0u) << Diagnostics(cluster);
  const pid_t pid = std::stoi(rank1.container_id.substr(9));
  ASSERT_GT(pid, 1);
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << "kill " << pid;
  std::cerr << "faults: killed trainer rank 1 (pid " << pid << ") at version "
            << TrainerVersion(cluster) << "\n";

  ASSERT_EQ(run.wait_for(seconds(660)), std::future_status::ready) << Diagnostics(cluster);
  const CommandResult result = run.get();
  ASSERT_EQ(result.exit_code, 0) << result.output << Diagnostics(cluster);
  const json job = cluster.Get(std::string("trainerjob ") + kExample);
  ASSERT_TRUE(job.is_object()) << Diagnostics(cluster);
  EXPECT_EQ(job.value("/status/phase"_json_pointer, ""), "Succeeded") << job.dump(2);
  EXPECT_EQ(job.value("/status/restarts"_json_pointer, int64_t{0}), 1) << job.dump(2);
  // The dead run announced up to kCheckpointEvery - 1 versions past the checkpoint the gang
  // resumed from; the resumed weights continue above them (docs/trainer.md, "Version numbers
  // across restarts"), so the final version is that much past the uninterrupted run's.
  const int64_t final_version = job.value("/status/version"_json_pointer, int64_t{0});
  EXPECT_GE(final_version, kRankRun.warm_start_steps + kRankRun.steps) << job.dump(2);
  EXPECT_LE(final_version, kRankRun.warm_start_steps + kRankRun.steps + kCheckpointEvery)
      << job.dump(2);
  EXPECT_EQ(job.value("/status/step"_json_pointer, int64_t{0}), kRankRun.steps) << job.dump(2);
  ExpectAccountingOnceSettled(cluster, {.steps = kRankRun.steps,
                                        .eval_rounds = kEvalRounds,
                                        .eval_samples = kRankRun.eval_samples,
                                        .faults = true});
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
