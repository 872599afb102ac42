// Test helper: runs the real sluice-apiserver binary in a state directory and kubectl against
// it, for the end-to-end tests. Binaries are found in SLUICE_BIN_DIR (build/bin), which CMake
// compiles in.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/spawned_process.h"
#include "tests/support/read_file.h"
#include "tests/support/shell.h"

namespace sluice::e2e {

inline std::string BinDir() { return SLUICE_BIN_DIR; }

inline std::string SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// The kubectl the end-to-end tests drive the cluster with: $SLUICE_TEST_KUBECTL when set (ctest's
// kubectl-machine/ registrations set it to the machine's /usr/bin/kubectl, Debian's 1.32:
// cmake/SluiceTesting.cmake), else the pinned v1.35 scripts/install-deps.sh installs.
#ifndef SLUICE_DEFAULT_KUBECTL
// Programs not made by sluice_add_test (the benchmarks) drive the machine's.
#define SLUICE_DEFAULT_KUBECTL "/usr/bin/kubectl"
#endif
inline std::string KubectlBinary() {
  const char* kubectl = std::getenv("SLUICE_TEST_KUBECTL");
  return kubectl != nullptr && *kubectl != '\0' ? kubectl : SLUICE_DEFAULT_KUBECTL;
}

inline bool HaveKubectl() { return ::access(KubectlBinary().c_str(), X_OK) == 0; }

// A command's exit code and its stdout and stderr together (RunShell).
using CommandResult = test_support::ShellResult;
using test_support::RunShell;
inline std::string Quote(const std::string& s) { return test_support::ShellQuote(s); }

// One sluice-apiserver process. Start() waits for the kubeconfig it writes and for /readyz.
class ApiServerProcess {
 public:
  explicit ApiServerProcess(std::string state_dir, std::vector<std::string> extra_args = {})
      : state_dir_(std::move(state_dir)), extra_args_(std::move(extra_args)) {}
  ~ApiServerProcess() { Kill(SIGKILL); }

  bool Start(int port = 0) {
    std::filesystem::create_directories(state_dir_);
    std::filesystem::remove(Kubeconfig());
    std::vector<std::string> args = {
        BinDir() + "/sluice-apiserver", "--state-dir", state_dir_, "--port",
        std::to_string(port),           "--log-level", "warn"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    pid_ = SpawnLogged(std::move(args), state_dir_ + "/apiserver.log", /*append=*/true);
    return AwaitReady(
        pid_,
        [&] {
          return std::filesystem::exists(Kubeconfig()) &&
                 Kubectl("get --raw /readyz").output.find("ok") != std::string::npos;
        },
        std::chrono::seconds(30));
  }

  // Sends `signal` and reaps the process.
  void Kill(int signal) { KillAndReap(pid_, signal); }

  std::string Kubeconfig() const { return state_dir_ + "/kubeconfig"; }
  const std::string& state_dir() const { return state_dir_; }
  std::string Log() const { return test_support::ReadFileOrEmpty(state_dir_ + "/apiserver.log"); }

  CommandResult Kubectl(const std::string& args) const {
    return RunShell(KubectlBinary() + " --kubeconfig " + Quote(Kubeconfig()) + " " + args);
  }

  // The server URL and token from the kubeconfig, for raw HTTP calls.
  std::string Server() const {
    return Kubectl("config view -o jsonpath={.clusters[0].cluster.server}").output;
  }

 private:
  std::string state_dir_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

}  // namespace sluice::e2e
