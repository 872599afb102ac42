// Test helpers for the main job's end-to-end runs that act on the cluster while the job trains:
// `sluice run` of the demo's manifest in the background (FollowedRun), and the checks every such
// run ends with (ExpectFinished): the run exited 0, the TrainerJob Succeeded at its final step
// and version with the expected gang restarts, and the Dataflow's accounting holds.
//
// Thread safety: a FollowedRun belongs to the test's thread; its command runs on its own.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/e2e/main_job/main_job_support.h"

namespace sluice::e2e {

// The short runs' `sluice run` flags: status every 2 s, 10 minutes for the job, 2 for the final
// evaluation.
inline constexpr char kShortRunFlags[] = "--interval 2 --timeout 600 --eval-wait 120";

// `sluice run` of a manifest in the background. Declare it before the SluiceSession: it is then
// destroyed after the cluster, so a failed assertion stops the cluster first, then interrupts
// the `sluice run` and waits for its end.
class FollowedRun {
 public:
  // Writes `manifest` to the cluster's folder as <kExample>.yaml and starts `sluice run` on it
  // against the cluster's state, with `flags`.
  void Start(const SluiceSession& cluster, const std::string& manifest,
             const std::string& flags = kShortRunFlags) {
    const std::string file = cluster.dir() + "/" + kExample + ".yaml";
    std::ofstream(file) << manifest;
    // The shell writes its pid and execs `sluice run`, which so keeps that pid.
    const std::string pid_file = cluster.dir() + "/sluice-run.pid";
    const std::string command = "echo $$ > " + pid_file + "; exec " + BinDir() + "/sluice run " +
                                file + " --state-dir " + cluster.state() + " " + flags;
    future_ = std::async(std::launch::async, [command] { return RunShell(command); });
    WaitUntil(
        [&] {
          std::ifstream in(pid_file);
          return static_cast<bool>(in >> pid_) && pid_ > 1;
        },
        std::chrono::seconds(10));
  }

  // A run still going when the test ends (a failed assertion) is interrupted, as Ctrl-C would:
  // `sluice run` follows an unreachable cluster until its --timeout otherwise. The future's
  // destructor then waits for it to exit.
  ~FollowedRun() {
    if (running() && pid_ > 1) ::kill(pid_, SIGINT);
  }
  FollowedRun() = default;
  FollowedRun(const FollowedRun&) = delete;
  FollowedRun& operator=(const FollowedRun&) = delete;

  bool running() const {
    return future_.valid() &&
           future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  }

  // Success while the run goes on; else a failure saying it ended before `what`, with its
  // output.
  ::testing::AssertionResult StillRunning(const std::string& what) {
    if (running()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "the run ended before " << what << ": " << Finish(std::chrono::seconds(0)).output;
  }

  // Waits up to `timeout` until the TrainerJob's status.version reaches `version`; a failure when
  // the run ended first or the time ran out.
  ::testing::AssertionResult ReachVersion(
      const SluiceSession& cluster, int64_t version,
      std::chrono::seconds timeout = std::chrono::seconds(300)) {
    const bool reached =
        WaitUntil([&] { return !running() || TrainerVersion(cluster) >= version; }, timeout);
    ::testing::AssertionResult still = StillRunning("version " + std::to_string(version));
    if (!still) return still;
    if (reached) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "version " << version << " not reached in " << timeout.count() << " s (at "
           << TrainerVersion(cluster) << ")";
  }

  // Waits up to `timeout` for the run's end: its result, or exit code -1 and a message when it
  // had not ended by then. Once ended, every call returns the same result.
  CommandResult Finish(std::chrono::seconds timeout = std::chrono::seconds(660)) {
    if (result_) return *result_;
    if (!future_.valid()) return {-1, "the run was not started"};
    if (future_.wait_for(timeout) != std::future_status::ready) {
      return {-1, "the run had not ended after " + std::to_string(timeout.count()) + " s"};
    }
    result_ = future_.get();
    return *result_;
  }

 private:
  std::future<CommandResult> future_;
  std::optional<CommandResult> result_;
  pid_t pid_ = 0;  // The `sluice run` process; 0 until known.
};

// How a followed run must have ended.
struct FinishedRun {
  // The accounting's shape; its steps are also the TrainerJob's status.step.
  RunShape shape;
  int64_t version = -1;  // status.version; -1: not checked (the caller reads it from `job`).
  int64_t restarts = 0;  // status.restarts, the gang restarts; -1: not checked.
};

// Waits for `run`'s end and checks it exited 0, the TrainerJob Succeeded as `expected` says, and
// the accounting once settled (ExpectAccountingOnceSettled). The TrainerJob goes to `job` when
// given. Failures are the calling test's.
inline void ExpectFinished(const SluiceSession& cluster, FollowedRun& run,
                           const FinishedRun& expected, nlohmann::json* job = nullptr) {
  using nlohmann::json;
  const CommandResult result = run.Finish();
  ASSERT_EQ(result.exit_code, 0) << result.output << Diagnostics(cluster);
  const json got = cluster.Get(std::string("trainerjob ") + kExample);
  ASSERT_TRUE(got.is_object()) << Diagnostics(cluster);
  if (job != nullptr) *job = got;
  EXPECT_EQ(got.value("/status/phase"_json_pointer, ""), "Succeeded") << got.dump(2);
  EXPECT_EQ(got.value("/status/step"_json_pointer, int64_t{0}), expected.shape.steps)
      << got.dump(2);
  if (expected.version >= 0) {
    EXPECT_EQ(got.value("/status/version"_json_pointer, int64_t{0}), expected.version)
        << got.dump(2);
  }
  if (expected.restarts >= 0) {
    EXPECT_EQ(got.value("/status/restarts"_json_pointer, int64_t{-1}), expected.restarts)
        << got.dump(2);
  }
  ExpectAccountingOnceSettled(cluster, expected.shape);
}

}  // namespace sluice::e2e
