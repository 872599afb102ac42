// End-to-end: the `sluice` command brings the local cluster up and down. `up` twice is harmless,
// the cluster serves kubectl and runs pods, and `down` leaves no process behind, the pods'
// included.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/node_process.h"

namespace sluice::e2e {
namespace {

std::vector<int> PidsOf(const std::string& run_dir) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec)) {
    std::ifstream in(entry.path());
    int pid = 0;
    if (in >> pid) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

// Running (a zombie left for an init that does not reap counts as gone).
bool Alive(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// Processes whose command line contains `needle` (from /proc).
std::vector<int> ProcessesWith(const std::string& needle) {
  std::vector<int> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

TEST(SluiceCliTest, UpTwiceIsHarmlessAndDownLeavesNoProcessBehind) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  char tmpl[] = "/tmp/sluice-cli-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string state = dir + "/state";
  const std::string config = dir + "/cluster.yaml";
  std::ofstream(config) << kTestClusterConfig;
  const std::string sluice = BinDir() + "/sluice";
  const std::string flags = " --state-dir " + state + " --bin-dir " + BinDir() +
                            NodeProcess::FreeUpPorts().Flags() + " --pod-ip-prefix " +
                            TestPodIpPrefix();
  CommandResult up = RunShell(sluice + " up --config " + config + flags);
  ASSERT_EQ(up.exit_code, 0) << up.output;
  EXPECT_NE(up.output.find("export KUBECONFIG=" + state + "/kubeconfig"), std::string::npos)
      << up.output;
  const std::vector<int> pids = PidsOf(state + "/run");
  ASSERT_EQ(pids.size(), 3u) << up.output;  // apiserver, node and operator.

  auto kubectl = [&](const std::string& args) {
    return RunShell(KubectlBinary() + " --kubeconfig " + state + "/kubeconfig " + args);
  };
  CommandResult nodes = kubectl("get nodes -L topology.kubernetes.io/region");
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_NE(nodes.output.find("west-gpu"), std::string::npos) << nodes.output;
  EXPECT_NE(nodes.output.find("local-eu-west"), std::string::npos) << nodes.output;
  EXPECT_EQ(kubectl("get crd trainerjobs.sluice.dev").exit_code, 0);

  // A pod whose process `down` must stop.
  const std::string marker = dir + "/pod-marker";
  std::ofstream(dir + "/pod.yaml") << "apiVersion: v1\nkind: Pod\nmetadata: {name: sleeper}\n"
                                      "spec:\n  containers:\n    - name: main\n"
                                      "      image: sluice/testpod:dev\n"
                                      "      args: [sleep, --term-file, " +
                                          marker + "]\n";
  ASSERT_EQ(kubectl("apply -f " + dir + "/pod.yaml").exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(marker); }))
      << kubectl("describe pod sleeper").output;
  ASSERT_EQ(ProcessesWith(marker).size(), 1u);

  // Again: nothing restarts.
  CommandResult again = RunShell(sluice + " up --config " + config + flags);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("already running"), std::string::npos) << again.output;
  EXPECT_EQ(PidsOf(state + "/run"), pids);

  CommandResult status = RunShell(sluice + " status --state-dir " + state);
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("east-gpu"), std::string::npos) << status.output;

  CommandResult cordon = RunShell(sluice + " node cordon east-cpu --state-dir " + state);
  EXPECT_EQ(cordon.exit_code, 0) << cordon.output;
  EXPECT_EQ(kubectl("get node east-cpu -o jsonpath={.spec.unschedulable}").output, "true");

  CommandResult down = RunShell(sluice + " down --state-dir " + state);
  ASSERT_EQ(down.exit_code, 0) << down.output;
  for (int pid : pids) EXPECT_FALSE(Alive(pid)) << "pid " << pid << " still runs";
  EXPECT_TRUE(ProcessesWith(marker).empty()) << "the pod's process survived sluice down";
  EXPECT_TRUE(PidsOf(state + "/run").empty());
  CommandResult down_again = RunShell(sluice + " down --state-dir " + state);
  EXPECT_EQ(down_again.exit_code, 0) << down_again.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::e2e
