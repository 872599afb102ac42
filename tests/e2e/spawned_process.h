// Test helper: the process plumbing the end-to-end tests' program wrappers share (ApiServerProcess,
// NodeProcess, DataflowProcess, ChildProcess): start a binary with its stderr (the JSON logs) in
// a file, wait until it is ready unless it exits first, stop it and reap it.
//
// Thread safety: functions; the pid arguments belong to the calling wrapper.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::e2e {

// The port in a Sluice server's "listening" log line
// ({"msg":"listening","url":"http[s]://host:PORT", "port":PORT,...}); nullopt before the line is
// there.
inline std::optional<int> ListeningPort(const std::string& log) {
  static const std::regex kListening("\"msg\":\"listening\",\"url\":\"https?://[^\"]*:([0-9]+)\"");
  std::smatch m;
  if (!std::regex_search(log, m, kListening)) return std::nullopt;
  return std::stoi(m[1]);
}

// Forks and execs argv[0] with `argv`, its stderr in `log` (appended when `append`, else the
// file is truncated). Returns the child's pid (-1 when fork fails); the child exits 127 when the
// exec fails.
inline pid_t SpawnLogged(std::vector<std::string> argv, const std::string& log, bool append) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), append ? "a" : "w", stderr);
    (void)out;
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Calls `ready` every `poll` while the process `pid` runs, for up to `timeout`. True once it
// returns true; false when the time passes or the process exits first: then `pid` becomes -1
// and `exit_status` (when given) receives its wait status.
inline bool AwaitReady(pid_t& pid, const std::function<bool()>& ready,
                       std::chrono::milliseconds timeout,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(50),
                       int* exit_status = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      if (exit_status != nullptr) *exit_status = status;
      return false;
    }
    std::this_thread::sleep_for(poll);
  }
  return false;
}

// Sends `signal` to `pid` and reaps it; returns the wait status (-1 when no process runs) and
// sets `pid` to -1.
inline int KillAndReap(pid_t& pid, int signal) {
  if (pid <= 0) return -1;
  ::kill(pid, signal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
  return status;
}

}  // namespace sluice::e2e
