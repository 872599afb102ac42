// Test helper: bash command lines, for tests that drive real tools (kubectl, helm, python3).
//
//   ShellQuote("it's")           'it'\''s' (one word for bash, whatever it holds)
//   RunShell("kubectl get pods") {exit code, stdout and stderr together}
//
// Thread safety: functions; RunShell blocks until the command ends.
#pragma once

#include <stdio.h>
#include <sys/wait.h>

#include <string>

namespace sluice::test_support {

inline std::string ShellQuote(const std::string& s) {
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

struct ShellResult {
  int exit_code = -1;  // -1: killed by a signal, or bash could not be started.
  std::string output;  // What the command wrote to its stdout (and stderr unless redirected).
};

// Runs `command` with bash -c, its stderr merged into stdout unless `merge_stderr` is false
// (then the command's own redirections decide where it goes).
inline ShellResult RunShell(const std::string& command, bool merge_stderr = true) {
  ShellResult result;
  const std::string line = merge_stderr ? command + " 2>&1" : command;
  FILE* pipe = ::popen(("bash -c " + ShellQuote(line)).c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace sluice::test_support
