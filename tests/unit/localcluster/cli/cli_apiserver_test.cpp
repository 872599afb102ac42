// End-to-end test of the `sluice up` machinery against the real sluice-apiserver binary: the
// apiserver component alone (the component list is data, components.h), started detached,
// waited for, the CRDs installed, `status` and `node` through the API, a second `up` finding it
// already running, a stale pid file replaced, and `down` leaving no process behind.
//
// The binary is looked for in $SLUICE_BIN_DIR, next to this test's build directory
// (<build>/tests/../bin) and in ./build/bin (ctest runs from the source tree); the test is
// skipped when none has it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/command_line.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/crd_install.h"
#include "localcluster/cli/down_command.h"
#include "localcluster/cli/ensure_component.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/node_command.h"
#include "localcluster/cli/pid_file.h"
#include "localcluster/cli/status_command.h"
#include "localcluster/cli/stop_component.h"
#include "tests/support/free_port.h"
#include "tests/unit/localcluster/cli/apiserver_test_support.h"

namespace sluice::cli {
namespace {

using test_support::FreePort;
using testing_support::FindBinDir;

class CliApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = FindBinDir();
    ASSERT_FALSE(bin_dir_.empty()) << "sluice-apiserver is not built";
    root_ = ::testing::TempDir() + "/sluice_cli_e2e_" + std::to_string(getpid());
    std::filesystem::remove_all(root_);
    layout_ = StateLayout(root_);
    spec_ = ApiServerComponent(layout_, bin_dir_, FreePort());
  }
  void TearDown() override {
    if (bin_dir_.empty()) return;
    // Whatever happened, no process is left behind.
    StopComponent(*FindKnownComponent("apiserver"), layout_, std::chrono::seconds(5));
    std::filesystem::remove_all(root_);
  }

  std::string bin_dir_;
  std::string root_;
  StateLayout layout_{"/"};
  ComponentSpec spec_;
};

TEST_F(CliApiServerTest, UpInstallCrdsStatusNodeUpAgainDown) {
  std::ostringstream out;
  Result<EnsureResult> started = EnsureComponent(spec_, layout_, std::chrono::seconds(30), out);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->outcome, EnsureOutcome::kStarted);
  const pid_t pid = started->pid;
  EXPECT_TRUE(ProcessAlive(pid));
  EXPECT_NE(out.str().find("apiserver: started (pid " + std::to_string(pid) + ")"),
            std::string::npos);
  EXPECT_EQ(InspectPidFile(layout_.PidFile("apiserver"), "sluice-apiserver").pid, pid);
  EXPECT_TRUE(std::filesystem::exists(layout_.Kubeconfig()));
  EXPECT_TRUE(std::filesystem::exists(layout_.ApiServerToken()));
  EXPECT_TRUE(std::filesystem::exists(layout_.LogFile("apiserver")));

  // The CRDs: created, then unchanged, then an update is detected and undone.
  Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(layout_.Kubeconfig());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<std::vector<CrdInstallResult>> installed = InstallCrds(**client, EmbeddedCrds());
  ASSERT_TRUE(installed.ok()) << installed.status().ToString();
  ASSERT_EQ(installed->size(), 4u);
  std::vector<std::string> names;
  for (const CrdInstallResult& r : *installed) {
    EXPECT_EQ(r.action, CrdAction::kCreate) << r.name;
    names.push_back(r.name);
  }
  ASSERT_TRUE(WaitCrdsEstablished(**client, names, std::chrono::seconds(30)).ok());
  installed = InstallCrds(**client, EmbeddedCrds());
  ASSERT_TRUE(installed.ok()) << installed.status().ToString();
  for (const CrdInstallResult& r : *installed) EXPECT_EQ(r.action, CrdAction::kUnchanged) << r.name;
  nlohmann::json changed = EmbeddedCrds()[0];
  changed["spec"]["names"]["shortNames"].push_back("zz");
  installed = InstallCrds(**client, {changed});
  ASSERT_TRUE(installed.ok()) << installed.status().ToString();
  EXPECT_EQ((*installed)[0].action, CrdAction::kUpdate);
  installed = InstallCrds(**client, EmbeddedCrds());
  ASSERT_TRUE(installed.ok());
  EXPECT_EQ((*installed)[0].action, CrdAction::kUpdate);

  // status: the API server runs, no nodes (no node agent), zero resources.
  std::ostringstream status_out, status_err;
  EXPECT_EQ(RunStatus({root_}, status_out, status_err), 0) << status_err.str();
  EXPECT_NE(status_out.str().find("apiserver   running (pid " + std::to_string(pid) + ")"),
            std::string::npos)
      << status_out.str();
  EXPECT_NE(status_out.str().find("node        stopped"), std::string::npos) << status_out.str();
  EXPECT_NE(status_out.str().find("No nodes."), std::string::npos);
  EXPECT_NE(status_out.str().find("trainerjobs   0"), std::string::npos) << status_out.str();

  // node: a missing node is a clear error; an existing one is patched.
  std::ostringstream node_out, node_err;
  EXPECT_EQ(RunNode({NodeAction::kCordon, "ghost", root_}, node_out, node_err), 1);
  EXPECT_EQ(node_err.str(), "sluice node cordon: node \"ghost\" not found\n");
  kube::ResourceClient nodes(**client, {"", "v1", "nodes", false}, "");
  ASSERT_TRUE(
      nodes.Create({{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}}).ok());
  for (NodeAction action : {NodeAction::kCordon, NodeAction::kCordon, NodeAction::kFail,
                            NodeAction::kRecover, NodeAction::kUncordon}) {
    EXPECT_EQ(RunNode({action, "n1", root_}, node_out, node_err), 0) << node_err.str();
  }
  EXPECT_EQ(node_out.str(),
            "node/n1 cordoned\nnode/n1 already cordoned\nnode/n1 marked failed (simulated)\n"
            "node/n1 recovered\nnode/n1 uncordoned\n");
  Result<nlohmann::json> n1 = nodes.Get("n1");
  ASSERT_TRUE(n1.ok());
  EXPECT_EQ((*n1)["spec"].value("unschedulable", true), false);
  EXPECT_FALSE(n1->contains(
      nlohmann::json::json_pointer("/metadata/annotations/sluice.dev~1simulated-failure")));

  // A second `up` of the component leaves it alone.
  std::ostringstream again;
  Result<EnsureResult> second = EnsureComponent(spec_, layout_, std::chrono::seconds(30), again);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->outcome, EnsureOutcome::kAlreadyRunning);
  EXPECT_EQ(second->pid, pid);
  EXPECT_EQ(again.str(), "apiserver: already running (pid " + std::to_string(pid) + ")\n");

  // down stops it and leaves nothing behind; a second down is harmless.
  client->reset();
  std::ostringstream down_out, down_err;
  EXPECT_EQ(RunDown({root_, std::chrono::seconds(10)}, down_out, down_err), 0);
  EXPECT_EQ(down_out.str(), "apiserver: stopped (pid " + std::to_string(pid) + ")\n");
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_FALSE(std::filesystem::exists(layout_.PidFile("apiserver")));
  std::ostringstream down_again;
  EXPECT_EQ(RunDown({root_, std::chrono::seconds(10)}, down_again, down_err), 0);
  EXPECT_NE(down_again.str().find("Nothing was running"), std::string::npos);

  // status now exits 1.
  std::ostringstream stopped_out, stopped_err;
  EXPECT_EQ(RunStatus({root_}, stopped_out, stopped_err), 1);
  EXPECT_NE(stopped_err.str().find("the API server is not running"), std::string::npos);
}

TEST_F(CliApiServerTest, StalePidFileIsReplacedAndItsProcessNeverSignalled) {
  std::filesystem::create_directories(layout_.RunDir());
  // The pid file names this test process: alive, but not sluice-apiserver.
  ASSERT_TRUE(WritePidFile(layout_.PidFile("apiserver"), getpid()).ok());
  StopReport report =
      StopComponent(*FindKnownComponent("apiserver"), layout_, std::chrono::seconds(1));
  EXPECT_EQ(report.kind, StopReportKind::kStalePidFile);  // And we are still here.
  ASSERT_TRUE(WritePidFile(layout_.PidFile("apiserver"), getpid()).ok());

  std::ostringstream out;
  Result<EnsureResult> started = EnsureComponent(spec_, layout_, std::chrono::seconds(30), out);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->outcome, EnsureOutcome::kStarted);
  EXPECT_NE(started->pid, getpid());
  EXPECT_NE(out.str().find("removing stale pid file"), std::string::npos) << out.str();
  EXPECT_EQ(InspectPidFile(layout_.PidFile("apiserver"), "sluice-apiserver").verdict,
            PidVerdict::kRunning);
  report = StopComponent(*FindKnownComponent("apiserver"), layout_, std::chrono::seconds(10));
  EXPECT_EQ(report.kind, StopReportKind::kStopped);
  EXPECT_FALSE(ProcessAlive(started->pid));
}

TEST_F(CliApiServerTest, UnhealthyStartIsStoppedAndReported) {
  // Two API servers on one state directory: the second cannot lock objects.db and exits.
  std::ostringstream out;
  Result<EnsureResult> first = EnsureComponent(spec_, layout_, std::chrono::seconds(30), out);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  StateLayout other(root_ + "/other");
  ComponentSpec clash = spec_;
  clash.args = {"--state-dir", layout_.ApiServerDir(),    "--kubeconfig", other.Kubeconfig(),
                "--port",      std::to_string(FreePort())};
  clash.health.kubeconfig = other.Kubeconfig();
  clash.dirs.clear();
  clash.remove_before_start = {other.Kubeconfig()};
  Result<EnsureResult> second = EnsureComponent(clash, other, std::chrono::seconds(10), out);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("exited"), std::string::npos)
      << second.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(other.PidFile("apiserver")));
  EXPECT_TRUE(ProcessAlive(first->pid));  // The healthy one is untouched.
}

}  // namespace
}  // namespace sluice::cli
