// End-to-end: two sluice-operator processes share the local cluster through leader election.
// Only the Lease holder reconciles; killing it hands over to the other within the lease time,
// and the new leader picks up work created after the old one died.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "tests/e2e/sluice_session.h"
#include "tests/support/free_port.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

std::string Dataflow(const std::string& name) {
  return "apiVersion: sluice.dev/v1alpha1\nkind: Dataflow\nmetadata: {name: " + name +
         "}\nspec:\n  dataset:\n    builtin: {generator: arithmetic, count: 50}\n  workflow:\n"
         "    type: single-turn\n    roles: [{name: policy, policy: tiny}]\n"
         "  reward: {type: exact-match}\n  storage: {size: 64Mi}\n";
}

// controller_runtime_reconcile_total summed over results for the dataflow controller, or -1
// when the metrics cannot be read.
double Reconciles(int port) {
  http::ClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(port);
  options.max_attempts = 1;
  auto client = http::Client::Create(options);
  if (!client.ok()) return -1;
  auto r = (*client)->Get("/metrics");
  if (!r.ok() || r->status != 200) return -1;
  double total = 0;
  std::istringstream lines(r->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("controller_runtime_reconcile_total{controller=\"dataflow\"", 0) == 0) {
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return total;
}

TEST(OperatorLeaderElectionTest, OnlyTheLeaderReconcilesAndAStandbyTakesOver) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  const std::string fast_lease =
      "SLUICE_OPERATOR_LEADER_ELECTION_LEASE_DURATION=4s "
      "SLUICE_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE=3s "
      "SLUICE_OPERATOR_LEADER_ELECTION_RETRY_PERIOD=500ms";
  ASSERT_TRUE(cluster.Up(fast_lease)) << cluster.up().output;
  const int first_port = cluster.operator_port();
  const std::string dir = cluster.dir();
  const std::string state = cluster.state();
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto apply = [&](const std::string& yaml) { return cluster.Apply(yaml); };
  // The first operator (from sluice up) leads.
  ASSERT_EQ(apply(Dataflow("first")), 0);
  ASSERT_TRUE(WaitUntil([&] { return kubectl("get pod first-dataflow").exit_code == 0; }));

  // A second candidate joins.
  const int second_port = test_support::FreePort();
  const pid_t second = fork();
  if (second == 0) {
    const std::string log = dir + "/second.log";
    FILE* out = std::freopen(log.c_str(), "a", stderr);
    (void)out;
    const std::string bin = BinDir() + "/sluice-operator";
    // As `sluice up` runs the first: its ServiceAccount, its Lease in sluice-system.
    const std::string kubeconfig = state + "/operator/kubeconfig";
    const std::string metrics = "127.0.0.1:" + std::to_string(second_port);
    const std::string health = "127.0.0.1:" + std::to_string(test_support::FreePort());
    setenv("SLUICE_OPERATOR_LEADER_ELECTION_LEASE_DURATION", "4s", 1);
    setenv("SLUICE_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE", "3s", 1);
    setenv("SLUICE_OPERATOR_LEADER_ELECTION_RETRY_PERIOD", "500ms", 1);
    execl(bin.c_str(), bin.c_str(), "--kubeconfig", kubeconfig.c_str(),
          "--leader-election-namespace", "sluice-system", "--metrics-bind-address", metrics.c_str(),
          "--health-probe-bind-address", health.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(WaitUntil([&] { return Reconciles(second_port) >= 0; }));
  ASSERT_EQ(apply(Dataflow("second")), 0);
  ASSERT_TRUE(WaitUntil([&] { return kubectl("get pod second-dataflow").exit_code == 0; }));
  // The standby reconciled nothing.
  EXPECT_EQ(Reconciles(second_port), 0);
  EXPECT_GT(Reconciles(first_port), 0);

  // Kill the leader without a chance to release the Lease: the standby takes over.
  std::ifstream pid_file(state + "/run/operator.pid");
  int leader_pid = 0;
  pid_file >> leader_pid;
  ASSERT_GT(leader_pid, 0);
  ASSERT_EQ(::kill(leader_pid, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_EQ(apply(Dataflow("third")), 0);
  ASSERT_TRUE(WaitUntil([&] { return kubectl("get pod third-dataflow").exit_code == 0; },
                        std::chrono::seconds(60)));
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(30));
  EXPECT_GT(Reconciles(second_port), 0);

  ::kill(second, SIGTERM);
  int status = 0;
  ::waitpid(second, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
