// A Sluice binary (under BinDir()) as a child process for end-to-end tests: started with flags,
// its stderr (JSON logs) in a file, signalled, waited for with a timeout, and connected to once
// its "listening" log line gives the port. Killed (SIGKILL) when the object goes away.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/spawned_process.h"
#include "tests/support/read_file.h"
#include "tests/support/wait_until.h"

namespace sluice::e2e {

class ChildProcess {
 public:
  ChildProcess(const std::string& program, std::vector<std::string> flags, std::string log)
      : log_(std::move(log)) {
    std::vector<std::string> args = {BinDir() + "/" + program};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = SpawnLogged(std::move(args), log_, /*append=*/false);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { KillAndReap(pid_, SIGKILL); }
  std::string Log() const { return test_support::ReadFileOrEmpty(log_); }
  pid_t pid() const { return pid_; }  // -1 once waited for.
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // The wait status once exited within `timeout`; -1 otherwise (then killed).
  int Wait(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
    return status;
  }
  // A client (bearer `token`, no retries) of the HTTP server the child logged it listens on
  // ("msg":"listening","url":...), within 60 s; null when it never did. With `tls`, over HTTPS
  // verified by it.
  std::unique_ptr<http::Client> Connect(const std::string& token,
                                        std::optional<http::ClientTlsOptions> tls = std::nullopt) {
    std::optional<int> port;
    test_support::WaitUntil([&] { return (port = ListeningPort(Log())).has_value(); },
                            std::chrono::seconds(60), std::chrono::milliseconds(50));
    if (!port) return nullptr;
    http::ClientOptions co;
    co.base_url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(*port);
    if (tls) co.tls = *tls;
    co.max_attempts = 1;
    if (!token.empty()) co.token = http::TokenSource::FromValue(token);
    return std::move(http::Client::Create(co)).value();
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

}  // namespace sluice::e2e
