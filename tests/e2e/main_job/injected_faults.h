// Test helpers that inject the main job's faults on the local cluster and wait for the recovery:
// a rollout replica deleted with kubectl, the dataflow's process killed with SIGKILL, the control
// plane restarted. Each prints a "faults:" line with the trainer's version at the fault. Failures
// (ASSERT) are the calling test's: wrap calls in ASSERT_NO_FATAL_FAILURE.
//
// Thread safety: the test's thread only.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "tests/e2e/main_job/main_job_support.h"

namespace sluice::e2e {

inline constexpr char kDataflowSelector[] = "app.kubernetes.io/component=dataflow";

inline std::string ReplicaSelector() { return std::string("sluice.dev/pool=") + kPool; }

// `kubectl delete pod` of the example pool's first replica; waits up to `timeout` until the pool
// has as many replicas as before, all Ready, the deleted one replaced.
inline void DeleteAReplica(const SluiceSession& cluster,
                           std::chrono::seconds timeout = std::chrono::seconds(120)) {
  const std::vector<PodFacts> before = LivePods(cluster, ReplicaSelector());
  ASSERT_FALSE(before.empty()) << Diagnostics(cluster);
  const PodFacts& replica = before.front();
  const CommandResult deleted = cluster.Kubectl("delete pod " + replica.name + " --wait=false");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  std::cerr << "faults: deleted " << replica.name << " at version " << TrainerVersion(cluster)
            << "\n";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<PodFacts> now = LivePods(cluster, ReplicaSelector());
        if (now.size() != before.size()) return false;
        for (const PodFacts& p : now) {
          if (!p.ready || p.uid == replica.uid) return false;
        }
        return true;
      },
      timeout))
      << Diagnostics(cluster);
}

// SIGKILL to the dataflow's process; waits up to 120 s for the node agent to restart its
// container in place (the same pod) and for it to be Ready, having recovered from its
// write-ahead log.
inline void KillTheDataflow(const SluiceSession& cluster) {
  const PodFacts dataflow = OnlyPod(cluster, kDataflowSelector);
  const pid_t pid = ContainerPid(dataflow);
  ASSERT_GT(pid, 1) << Diagnostics(cluster);
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << "kill " << pid;
  std::cerr << "faults: killed the dataflow (pid " << pid << ") at version "
            << TrainerVersion(cluster) << "\n";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const PodFacts now = OnlyPod(cluster, kDataflowSelector);
        return now.restarts > dataflow.restarts && now.ready;
      },
      std::chrono::seconds(120)))
      << Diagnostics(cluster);
  EXPECT_EQ(OnlyPod(cluster, kDataflowSelector).uid, dataflow.uid)
      << "the container restarted in place; the pod was not replaced";
}

// The API server and the operator die together (SIGKILL) and `sluice up` starts them again on the
// same ports and storage; the workers go on without them meanwhile.
inline void RestartTheControlPlane(SluiceSession& cluster) {
  const CommandResult restarted = cluster.KillAndRestart({"apiserver", "operator"});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output << Diagnostics(cluster);
  std::cerr << "faults: restarted the API server and the operator at version "
            << TrainerVersion(cluster) << "\n";
}

}  // namespace sluice::e2e
