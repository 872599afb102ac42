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

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together.
};

inline std::string Quote(const std::string& s);

// Runs a bash command line and captures its output.
inline CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(("bash -c " + Quote(command + " 2>&1")).c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// One sluice-apiserver process. Start() waits for the kubeconfig it writes and for /readyz.
class ApiServerProcess {
 public:
  explicit ApiServerProcess(std::string state_dir, std::vector<std::string> extra_args = {})
      : state_dir_(std::move(state_dir)), extra_args_(std::move(extra_args)) {}
  ~ApiServerProcess() { Kill(SIGKILL); }

  bool Start(int port = 0) {
    std::filesystem::create_directories(state_dir_);
    std::filesystem::remove(Kubeconfig());
    const std::string binary = BinDir() + "/sluice-apiserver";
    std::vector<std::string> args = {
        binary, "--state-dir", state_dir_, "--port", std::to_string(port), "--log-level", "warn"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = state_dir_ + "/apiserver.log";
      FILE* out = std::freopen(log.c_str(), "a", stderr);
      (void)out;
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::filesystem::exists(Kubeconfig()) &&
          Kubectl("get --raw /readyz").output.find("ok") != std::string::npos) {
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Sends `signal` and reaps the process.
  void Kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  std::string Kubeconfig() const { return state_dir_ + "/kubeconfig"; }
  const std::string& state_dir() const { return state_dir_; }
  std::string Log() const {
    std::ifstream in(state_dir_ + "/apiserver.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

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
