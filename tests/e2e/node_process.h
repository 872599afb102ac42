// Test helper: a local cluster for the end-to-end tests: the real sluice-apiserver plus the real
// sluice-node with fast heartbeats and back-offs, and kubectl against them.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/spawned_process.h"
#include "tests/support/free_port.h"
#include "tests/support/read_file.h"
#include "tests/support/wait_until.h"

namespace sluice::e2e {

// Four nodes: two regions, 2 + 1 GPUs, one CPU node.
inline constexpr char kTestClusterConfig[] = R"(nodes:
  - name: east-gpu
    region: local-us-east
    cpu: "8"
    memory: 16Gi
    gpus: 2
    gpuProduct: H100
  - name: west-gpu
    region: local-eu-west
    cpu: "8"
    memory: 16Gi
    gpus: 1
    gpuProduct: A100
  - name: east-cpu
    region: local-us-east
    cpu: "4"
    memory: 8Gi
  - name: west-cpu
    region: local-eu-west
    cpu: "4"
    memory: 8Gi
)";

// The 127.N/16 a test's pods get: per process, since ctest runs tests in parallel and two
// clusters handing out the same pod address would answer each other's requests.
inline std::string TestPodIpPrefix() { return "127." + std::to_string(100 + getpid() % 150); }

class NodeProcess {
 public:
  NodeProcess(std::string state_dir, std::string kubeconfig)
      : state_dir_(std::move(state_dir)), kubeconfig_(std::move(kubeconfig)) {}
  ~NodeProcess() { Stop(SIGKILL); }

  // Starts sluice-node and waits for its /readyz. `extra` flags override the fast defaults.
  bool Start(const std::vector<std::string>& extra = {}) {
    std::filesystem::create_directories(state_dir_);
    const std::string config = state_dir_ + "/cluster.yaml";
    std::ofstream(config) << kTestClusterConfig;
    port_ = test_support::FreePort();
    std::vector<std::string> args = {BinDir() + "/sluice-node",
                                     "--kubeconfig",
                                     kubeconfig_,
                                     "--cluster-config",
                                     config,
                                     "--state-dir",
                                     state_dir_,
                                     "--port",
                                     std::to_string(port_),
                                     "--heartbeat-interval",
                                     "500ms",
                                     "--node-monitor-grace-period",
                                     "2s",
                                     "--pod-eviction-timeout",
                                     "1s",
                                     "--crash-backoff",
                                     "1s",
                                     "--shutdown-grace",
                                     "2s",
                                     "--pod-ip-prefix",
                                     TestPodIpPrefix(),
                                     "--log-level",
                                     "info"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = SpawnLogged(std::move(args), state_dir_ + "/node.log", /*append=*/true);
    return AwaitReady(
        pid_, [&] { return Ready(); }, std::chrono::seconds(30));
  }

  // Sends `signal`, waits for the exit and returns the exit status (-1 if none ran).
  int Stop(int signal) {
    if (pid_ <= 0) return -1;
    const int status = KillAndReap(pid_, signal);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string Log() const { return test_support::ReadFileOrEmpty(state_dir_ + "/node.log"); }
  const std::string& state_dir() const { return state_dir_; }
  int port() const { return port_; }

  bool Ready() const {
    http::ClientOptions options;
    options.base_url = "http://127.0.0.1:" + std::to_string(port_);
    options.max_attempts = 1;
    auto client = http::Client::Create(options);
    if (!client.ok()) return false;
    auto r = (*client)->Get("/readyz");
    return r.ok() && r->status == 200;
  }

  // Ports for `sluice up`: --apiserver-port, --node-port and --operator-port (which also takes
  // the next port), all free now and all distinct (tests/support/free_port.h: the first two are
  // probed together, and the operator's pair avoids them).
  struct UpPorts {
    int apiserver = 0;
    int node = 0;
    int operator_port = 0;
    // The flags as `sluice up` takes them.
    std::string Flags() const {
      return " --apiserver-port " + std::to_string(apiserver) + " --node-port " +
             std::to_string(node) + " --operator-port " + std::to_string(operator_port);
    }
  };
  static UpPorts FreeUpPorts() {
    const std::vector<int> two = test_support::FreePorts(2);
    return {two[0], two[1], test_support::FreePortPair(two)};
  }

 private:
  std::string state_dir_;
  std::string kubeconfig_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Polls `condition` every 100 ms until it holds or `timeout` passes.
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  return ::sluice::test_support::WaitUntil(condition, timeout, std::chrono::milliseconds(100));
}

}  // namespace sluice::e2e
