// End-to-end test of `sluice run` against the real sluice-apiserver with the Sluice CRDs
// installed: examples/single-policy-grpo.yaml is applied (created, then unchanged, then
// configured), and followed while a background thread plays the operator by writing the
// TrainerJob's (and its Dataflow's and RolloutPool's) status through the status subresource:
// Running with a step, then Succeeded (exit 0, progress.jsonl has the samples) or Failed with a
// condition (exit 1 with its message). Also: a document the server rejects (exit 1 naming the
// field, nothing followed), --timeout, and an interrupt (exit 130). After success the run waits
// for the Dataflow's evaluation at the final version (everyVersions 50, version 200) and prints
// the eval line; that wait is bounded by --eval-wait, cut short by an interrupt (exit 0), skipped
// with --eval-wait 0 or when the final version is not a multiple of everyVersions.
//
// The binary is looked for as in cli_apiserver_test.cpp; the test is skipped when it is not
// built.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/crd_install.h"
#include "localcluster/cli/ensure_component.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/progress_log.h"
#include "localcluster/cli/run_command.h"
#include "localcluster/cli/stop_component.h"
#include "tests/support/free_port.h"
#include "tests/support/read_file.h"
#include "tests/unit/localcluster/cli/apiserver_test_support.h"

namespace sluice::cli {
namespace {

using test_support::FreePort;
using testing_support::FindBinDir;

using nlohmann::json;

std::string FindExample(const std::string& name) {
  std::vector<std::string> candidates;
  if (const char* src = std::getenv("SLUICE_SOURCE_DIR")) {
    candidates.push_back(std::string(src) + "/examples/" + name);
  }
  if (Result<std::string> self = SelfExecutableDir(); self.ok()) {
    candidates.push_back(*self + "/../../examples/" + name);
  }
  candidates.push_back(CurrentDirectory() + "/examples/" + name);
  for (const std::string& path : candidates) {
    if (std::filesystem::exists(path)) return std::filesystem::weakly_canonical(path).string();
  }
  return "";
}

// Polls until `path` contains `needle` (true) or 30 s pass (false).
bool WaitForFileContaining(const std::string& path, const std::string& needle) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (test_support::ReadFileOrEmpty(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

class CliRunApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = FindBinDir();
    ASSERT_FALSE(bin_dir_.empty()) << "sluice-apiserver is not built";
    example_ = FindExample("single-policy-grpo.yaml");
    ASSERT_FALSE(example_.empty()) << "examples/single-policy-grpo.yaml not found";
    // Normalized, as the commands print it.
    root_ = AbsolutePath(::testing::TempDir() + "/sluice_cli_run_" + std::to_string(getpid()), "/");
    std::filesystem::remove_all(root_);
    layout_ = StateLayout(root_);
    const ComponentSpec spec = ApiServerComponent(layout_, bin_dir_, FreePort());
    std::ostringstream out;
    Result<EnsureResult> started = EnsureComponent(spec, layout_, std::chrono::seconds(30), out);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(layout_.Kubeconfig());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    Result<std::vector<CrdInstallResult>> installed = InstallCrds(*client_, EmbeddedCrds());
    ASSERT_TRUE(installed.ok()) << installed.status().ToString();
    std::vector<std::string> names;
    for (const CrdInstallResult& r : *installed) names.push_back(r.name);
    ASSERT_TRUE(WaitCrdsEstablished(*client_, names, std::chrono::seconds(30)).ok());
  }
  void TearDown() override {
    if (bin_dir_.empty()) return;
    client_.reset();
    StopComponent(*FindKnownComponent("apiserver"), layout_, std::chrono::seconds(5));
    std::filesystem::remove_all(root_);
  }

  RunOptions Options(const std::string& manifest, const std::string& experiment) const {
    RunOptions o;
    o.manifests = {manifest};
    o.state_dir = root_;
    o.experiment = experiment;
    o.interval = std::chrono::milliseconds(200);
    o.timeout = std::chrono::seconds(60);  // A safety net; the tests end long before.
    o.eval_wait = std::chrono::seconds(30);
    o.display = RunDisplay::kPlain;
    return o;
  }

  // Merge-patches the status subresource of a sluice.dev object in "default".
  void PatchStatus(const std::string& resource, const std::string& name, const json& status) {
    kube::ResourceClient rc(*client_, {"sluice.dev", "v1alpha1", resource, true}, "default");
    Result<json> patched =
        rc.Patch(name, kube::PatchType::kMerge, json({{"status", status}}).dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << resource << "/" << name << ": " << patched.status().ToString();
  }

  std::string WriteManifest(const std::string& file, const std::string& text) const {
    const std::string path = root_ + "/" + file;
    std::ofstream(path) << text;
    return path;
  }

  std::string bin_dir_;
  std::string example_;
  std::string root_;
  StateLayout layout_{"/"};
  std::unique_ptr<kube::RestClient> client_;
};

TEST_F(CliRunApiServerTest, AppliesTwiceThenFollowsToSuccess) {
  RunOptions apply = Options(example_, "grpo");
  apply.follow = false;
  std::ostringstream out, err;
  ASSERT_EQ(RunRun(apply, out, err), 0) << err.str();
  EXPECT_EQ(out.str(),
            "policy.sluice.dev/tiny created\n"
            "dataflow.sluice.dev/arithmetic created\n"
            "rolloutpool.sluice.dev/tiny-rollout created\n"
            "trainerjob.sluice.dev/tiny-grpo created\n"
            "Not following (--no-follow). Follow later with `sluice run` again; progress is "
            "recorded only while following.\n");
  EXPECT_EQ(err.str(), "");

  // The second run finds everything unchanged and follows while the "operator" works.
  const std::string progress = layout_.ProgressLog("grpo");
  std::thread operator_thread([&] {
    if (!WaitForFileContaining(progress, "tiny-grpo")) return;
    PatchStatus("dataflows", "arithmetic",
                {{"buffered", 64},
                 {"trajectoriesPerSecond", 3.5},
                 {"evaluation", {{"version", 0}, {"accuracy", 0.125}}}});
    PatchStatus("rolloutpools", "tiny-rollout",
                {{"replicas", 2},
                 {"readyReplicas", 2},
                 {"tokensPerSecond", 5230},
                 {"regions", {{{"name", "local-us-east"}, {"replicas", 2}, {"ready", 2}}}}});
    PatchStatus("trainerjobs", "tiny-grpo",
                {{"phase", "Running"},
                 {"step", 5},
                 {"version", 5},
                 {"lastMetrics",
                  {{"rewardMean", 0.25},
                   {"loss", 0.5},
                   {"tokensPerSecond", 100},
                   {"dataWaitFraction", 0.25}}}});
    if (!WaitForFileContaining(progress, "\"step\":5")) return;
    PatchStatus("trainerjobs", "tiny-grpo",
                {{"phase", "Succeeded"},
                 {"step", 200},
                 {"version", 200},
                 {"lastMetrics", {{"rewardMean", 0.9}}}});
    // The trainer is done; the rollout pool finishes the round at version 200 a little later.
    if (!WaitForFileContaining(progress, "\"phase\":\"Succeeded\"")) return;
    PatchStatus("dataflows", "arithmetic",
                {{"evaluation", {{"version", 200}, {"accuracy", 0.41}}}});
  });
  out.str("");
  err.str("");
  const int code = RunRun(Options(example_, "grpo"), out, err);
  operator_thread.join();
  EXPECT_EQ(code, 0) << out.str() << err.str();
  EXPECT_EQ(out.str().rfind("policy.sluice.dev/tiny unchanged\n"
                            "dataflow.sluice.dev/arithmetic unchanged\n"
                            "rolloutpool.sluice.dev/tiny-rollout unchanged\n"
                            "trainerjob.sluice.dev/tiny-grpo unchanged\n"
                            "Following experiment grpo (recording " +
                                progress + ")\n",
                            0),
            0u)
      << out.str();
  EXPECT_NE(out.str().find(" tiny-grpo Running step 5/200 v5 reward 0.25 loss 0.5 eval 0.125 "
                           "rollout 5230 tok/s train 100 tok/s wait 25% buffer 64 staleness - "
                           "replicas local-us-east=2\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("Every TrainerJob succeeded; waiting up to 30 s for the evaluation at "
                           "version 200 of dataflow arithmetic (newest evaluated: 0) (Ctrl-C "
                           "stops waiting).\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("Experiment grpo succeeded.\n"
                           "tiny-grpo succeeded: 200/200 steps, version 200, reward 0.9\n"
                           "eval accuracy: before 12.5% -> after 41.0% (versions 0 -> 200)\n"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("No evaluation at"), std::string::npos) << out.str();

  Result<ProgressLog> log = ReadProgressLog(progress);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->skipped, 0u);
  ASSERT_GE(log->rows.size(), 3u);  // Before the status, Running, Succeeded.
  EXPECT_EQ(log->rows.front().phase, "");
  EXPECT_EQ(log->rows.front().steps, 200);
  EXPECT_EQ(log->rows.back().phase, "Succeeded");
  EXPECT_EQ(log->rows.back().step, 200);
  bool saw_running = false;
  for (const ProgressRow& row : log->rows) {
    EXPECT_EQ(row.trainer, "tiny-grpo");
    if (row.phase != "Running") continue;
    saw_running = true;
    EXPECT_EQ(row.step, 5);
    EXPECT_EQ(row.reward_mean, 0.25);
    EXPECT_EQ(row.buffered, 64);
    EXPECT_EQ(row.rollout_tokens_per_second, 5230);
    EXPECT_EQ(row.region_replicas, (std::map<std::string, int64_t>{{"local-us-east", 2}}));
  }
  EXPECT_TRUE(saw_running);
  for (size_t i = 1; i < log->rows.size(); ++i) EXPECT_GE(log->rows[i].t, log->rows[i - 1].t);

  // A changed spec is configured; status stays as the "operator" wrote it. Already Succeeded:
  // following ends at the first sample.
  std::string text = test_support::ReadFileOrEmpty(example_);
  const size_t steps = text.find("steps: 200");
  ASSERT_NE(steps, std::string::npos);
  text.replace(steps, 10, "steps: 300");
  out.str("");
  EXPECT_EQ(RunRun(Options(WriteManifest("changed.yaml", text), "grpo"), out, err), 0) << err.str();
  EXPECT_NE(out.str().find("trainerjob.sluice.dev/tiny-grpo configured\n"), std::string::npos);
  EXPECT_NE(out.str().find("policy.sluice.dev/tiny unchanged\n"), std::string::npos);
  EXPECT_NE(out.str().find("tiny-grpo succeeded: 200/300 steps"), std::string::npos) << out.str();
  // The final round is already in: no wait, and this run saw one evaluation only.
  EXPECT_EQ(out.str().find("waiting up to"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("eval accuracy: 41.0% at version 200 (no later evaluation)\n"),
            std::string::npos)
      << out.str();
}

// Success with the round at the final version missing: --eval-wait bounds the wait, an interrupt
// ends it with exit 0, --eval-wait 0 and a final version that is no multiple of everyVersions
// skip it. The eval line then shows the newest evaluation seen.
TEST_F(CliRunApiServerTest, EvalWaitIsBoundedInterruptibleAndSkippable) {
  RunOptions apply = Options(example_, "wait");
  apply.follow = false;
  std::ostringstream out, err;
  ASSERT_EQ(RunRun(apply, out, err), 0) << err.str();
  PatchStatus("dataflows", "arithmetic", {{"evaluation", {{"version", 150}, {"accuracy", 0.5}}}});
  PatchStatus("trainerjobs", "tiny-grpo",
              {{"phase", "Succeeded"}, {"step", 200}, {"version", 200}});
  const std::string missing =
      "No evaluation at version 200 of dataflow arithmetic (newest evaluated: 150)";
  const std::string eval_line = "eval accuracy: 50.0% at version 150 (no later evaluation)\n";

  // The round never comes: the wait ends after --eval-wait, and the run still succeeds.
  RunOptions bounded = Options(example_, "wait");
  bounded.eval_wait = std::chrono::seconds(1);
  out.str("");
  err.str("");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunRun(bounded, out, err), 0) << out.str() << err.str();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_NE(out.str().find("waiting up to 1 s for the evaluation at version 200 of dataflow "
                           "arithmetic (newest evaluated: 150)"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(missing + " within --eval-wait; the eval line shows the newest seen.\n"
                                     "Experiment wait succeeded.\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(eval_line), std::string::npos) << out.str();

  // An interrupt while waiting ends the wait; the experiment succeeded, so exit 0.
  out.str("");
  EXPECT_EQ(RunExperiment(
                Options(example_, "wait"), [] { return true; }, out, err),
            0)
      << out.str() << err.str();
  EXPECT_NE(out.str().find(missing + " (interrupted while waiting); the eval line shows the newest "
                                     "seen.\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(eval_line), std::string::npos) << out.str();

  // --eval-wait 0: no wait and no note.
  RunOptions no_wait = Options(example_, "wait");
  no_wait.eval_wait = std::chrono::seconds(0);
  out.str("");
  EXPECT_EQ(RunRun(no_wait, out, err), 0) << err.str();
  EXPECT_EQ(out.str().find("waiting up to"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("No evaluation at"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Experiment wait succeeded.\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(eval_line), std::string::npos) << out.str();

  // Version 205 is no multiple of everyVersions 50: no round will come, so no wait.
  PatchStatus("trainerjobs", "tiny-grpo", {{"version", 205}});
  out.str("");
  const auto quick = std::chrono::steady_clock::now();
  EXPECT_EQ(RunRun(Options(example_, "wait"), out, err), 0) << err.str();
  EXPECT_LT(std::chrono::steady_clock::now() - quick, std::chrono::seconds(20));
  EXPECT_EQ(out.str().find("waiting up to"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("tiny-grpo succeeded: 200/200 steps, version 205"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(eval_line), std::string::npos) << out.str();
}

TEST_F(CliRunApiServerTest, RejectedDocumentTimeoutInterruptAndFailure) {
  const std::string example = test_support::ReadFileOrEmpty(example_);
  // A core kind resolves too; a TrainerJob with steps 0 is rejected by the schema.
  std::string invalid = example;
  invalid.replace(invalid.find("steps: 200"), 10, "steps: 0");
  invalid += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n";
  std::ostringstream out, err;
  EXPECT_EQ(RunRun(Options(WriteManifest("bad.yaml", invalid), "bad"), out, err), 1);
  EXPECT_NE(err.str().find("document 4 (TrainerJob tiny-grpo): "), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("spec.steps"), std::string::npos) << err.str();
  EXPECT_NE(out.str().find("configmap/settings created\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("Following"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(layout_.ProgressLog("bad")));

  // Nobody writes a status: --timeout ends the run.
  RunOptions timed = Options(example_, "fail");
  timed.timeout = std::chrono::seconds(1);
  out.str("");
  err.str("");
  EXPECT_EQ(RunRun(timed, out, err), 1);
  EXPECT_NE(err.str().find("timed out after 1 s"), std::string::npos) << err.str();
  EXPECT_NE(out.str().find("trainerjob.sluice.dev/tiny-grpo created\n"), std::string::npos);

  // An interrupt stops following with 130 and leaves the objects.
  err.str("");
  EXPECT_EQ(RunExperiment(
                Options(example_, "fail"), [] { return true; }, out, err),
            130);
  EXPECT_NE(err.str().find("interrupted"), std::string::npos);

  // The job fails with a condition saying why.
  const std::string progress = layout_.ProgressLog("fail");
  const size_t before = Count(test_support::ReadFileOrEmpty(progress), "\n");
  std::thread operator_thread([&] {
    // Wait for a sample of this run before failing the job.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Count(test_support::ReadFileOrEmpty(progress), "\n") <= before &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    PatchStatus("trainerjobs", "tiny-grpo",
                {{"phase", "Failed"},
                 {"step", 7},
                 {"conditions",
                  {{{"type", "Failed"},
                    {"status", "True"},
                    {"reason", "BackoffLimitExceeded"},
                    {"message", "rank 0 exited with code 137 three times"},
                    {"lastTransitionTime", "2024-05-01T12:00:00Z"}}}}});
  });
  out.str("");
  err.str("");
  const int code = RunRun(Options(example_, "fail"), out, err);
  operator_thread.join();
  EXPECT_EQ(code, 1) << out.str() << err.str();
  EXPECT_NE(err.str().find("sluice run: trainerjob tiny-grpo failed: BackoffLimitExceeded: rank 0 "
                           "exited with code 137 three times\n"),
            std::string::npos)
      << err.str();
  EXPECT_NE(out.str().find(" tiny-grpo Failed step 7/200 "), std::string::npos) << out.str();
  // The objects are still there.
  kube::ResourceClient jobs(*client_, {"sluice.dev", "v1alpha1", "trainerjobs", true}, "default");
  EXPECT_TRUE(jobs.Get("tiny-grpo").ok());
}

// The cluster goes away while `sluice run` follows (sluice down, a crash): following ends after
// --unreachable-timeout instead of lasting for ever (--timeout is 0 by default), while an outage
// shorter than it is sat out.
TEST_F(CliRunApiServerTest, AnApiServerThatStaysUnreachableEndsFollowing) {
  const std::string progress = layout_.ProgressLog("gone");
  std::thread stopper([&] {
    // A first sample, then the API server stops.
    ASSERT_TRUE(WaitForFileContaining(progress, "tiny-grpo"));
    StopComponent(*FindKnownComponent("apiserver"), layout_, std::chrono::seconds(5));
  });
  RunOptions o = Options(example_, "gone");
  o.unreachable_timeout = std::chrono::seconds(1);
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  const int code = RunRun(o, out, err);
  stopper.join();
  EXPECT_EQ(code, 1) << out.str() << err.str();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_NE(err.str().find("sluice run: the API server has been unreachable for 1 s ("),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("stopped following gone"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace sluice::cli
