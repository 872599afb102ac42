// Test helper: a whole local cluster brought up with the real `sluice up` (apiserver, node agent,
// operator) in a temporary directory, with kubectl against it, for the operator's end-to-end
// tests. Ports are picked free; `env` passes settings to the components (e.g.
// SLUICE_OPERATOR_TRAINER_IMAGE=...), which inherit the environment of `sluice up`.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/node_process.h"

namespace sluice::e2e {

// A small Dataflow named "arith" (built-in arithmetic rows) most operator tests need.
inline constexpr char kTestDataflowManifest[] = R"(apiVersion: sluice.dev/v1alpha1
kind: Dataflow
metadata:
  name: arith
spec:
  dataset:
    builtin: {generator: arithmetic, count: 100}
  workflow:
    type: single-turn
    roles: [{name: policy, policy: tiny}]
  reward: {type: exact-match}
  storage: {size: 64Mi}
)";

// The Policy "tiny" the test pools and jobs name (the built-in tiny model), ending in "---" so a
// manifest can follow. Pools that host a missing Policy get a PolicyNotFound event, so tests
// that check events apply it.
inline constexpr char kTestPolicyManifest[] = R"(apiVersion: sluice.dev/v1alpha1
kind: Policy
metadata:
  name: tiny
spec:
  model:
    source:
      builtin: {layers: 2, hiddenSize: 64, heads: 4, kvHeads: 2, maxSequenceLength: 64, seed: 1}
    dtype: float32
---
)";

class SluiceSession {
 public:
  SluiceSession() {
    char tmpl[] = "/tmp/sluice-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    state_ = dir_ + "/state";
    std::ofstream(dir_ + "/cluster.yaml") << kTestClusterConfig;
  }
  ~SluiceSession() {
    Down();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SluiceSession(const SluiceSession&) = delete;
  SluiceSession& operator=(const SluiceSession&) = delete;

  // Runs `sluice up` with `flags` (e.g. "--prometheus") after the test's own; the result (and its
  // output, for failure messages) is kept in up().
  bool Up(const std::string& env = "", const std::string& flags = "") {
    const NodeProcess::UpPorts ports = NodeProcess::FreeUpPorts();
    operator_port_ = ports.operator_port;
    up_command_ = env + " " + BinDir() + "/sluice up --config " + dir_ + "/cluster.yaml" +
                  " --state-dir " + state_ + " --bin-dir " + BinDir() + ports.Flags() +
                  " --pod-ip-prefix " + TestPodIpPrefix() + " " + flags;
    up_ = RunShell(up_command_);
    running_ = up_.exit_code == 0;
    return running_;
  }
  // Kills each of `components` (apiserver, node, operator) with SIGKILL, by its pid file, waits
  // for it to be gone, then runs the same `sluice up` again: it starts what is missing, on the
  // same ports and state, and leaves the rest running. Returns `sluice up`'s result.
  CommandResult KillAndRestart(const std::vector<std::string>& components) {
    for (const std::string& c : components) {
      std::ifstream in(state_ + "/run/" + c + ".pid");
      pid_t pid = 0;
      if (!(in >> pid) || pid <= 1) return {1, "no pid file for " + c};
      if (::kill(pid, SIGKILL) != 0) return {1, "kill " + std::to_string(pid) + " failed"};
      for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (::kill(pid, 0) == 0)
        return {1, c + " (pid " + std::to_string(pid) + ") outlived SIGKILL"};
    }
    return RunShell(up_command_);
  }
  // Stops the cluster. Every test that ran the operator checks here that RBAC refused it
  // nothing: the operator runs as its ServiceAccount with only its table of rules
  // (api/operator_rbac.h), so a call the table lacks is a 403 in the access log.
  CommandResult Down() {
    if (!running_) return {0, ""};
    running_ = false;
    const std::string refused = OperatorForbiddenRequests();
    if (!refused.empty()) {
      ADD_FAILURE() << "RBAC refused the operator (add the rule to api/operator_rbac.cpp):\n"
                    << refused;
    }
    return RunShell(BinDir() + "/sluice down --state-dir " + state_);
  }
  // The API server's access-log lines of requests by the operator's ServiceAccount refused
  // with 403.
  std::string OperatorForbiddenRequests() const {
    std::ifstream in(state_ + "/logs/apiserver.log");
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.find("\"user\":\"system:serviceaccount:sluice-system:sluice-operator\"") !=
              std::string::npos &&
          line.find("\"status\":403") != std::string::npos) {
        out += line + "\n";
      }
    }
    return out;
  }

  CommandResult Kubectl(const std::string& args) const {
    return RunShell(KubectlBinary() + " --kubeconfig " + state_ + "/kubeconfig " + args);
  }
  // `kubectl get WHAT -o json`, parsed; null when it fails.
  nlohmann::json Get(const std::string& what) const {
    CommandResult r = Kubectl("get " + what + " -o json");
    return r.exit_code == 0 ? nlohmann::json::parse(r.output, nullptr, false) : nlohmann::json();
  }
  // A jsonpath of one object (`kubectl get WHAT -o jsonpath='PATH'`).
  std::string JsonPath(const std::string& what, const std::string& path) const {
    return Kubectl("get " + what + " -o jsonpath='" + path + "'").output;
  }
  // `kubectl apply` of YAML text; the exit code.
  int Apply(const std::string& yaml) {
    const std::string file = dir_ + "/manifest-" + std::to_string(++applied_) + ".yaml";
    std::ofstream(file) << yaml;
    return Kubectl("apply -f " + file).exit_code;
  }
  // The end of a component's log (apiserver, node, operator).
  std::string Log(const std::string& component, size_t max_bytes = 4000) const {
    std::ifstream in(state_ + "/logs/" + component + ".log");
    std::stringstream s;
    s << in.rdbuf();
    const std::string text = s.str();
    return text.substr(text.size() > max_bytes ? text.size() - max_bytes : 0);
  }

  const CommandResult& up() const { return up_; }
  const std::string& dir() const { return dir_; }
  const std::string& state() const { return state_; }
  int operator_port() const { return operator_port_; }

 private:
  std::string dir_, state_;
  std::string up_command_;
  CommandResult up_;
  bool running_ = false;
  int operator_port_ = 0;
  int applied_ = 0;
};

}  // namespace sluice::e2e
