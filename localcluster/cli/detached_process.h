// Starting a component so that it outlives `sluice up`, and stopping it again.
//
// StartDetached double-forks: the intermediate child calls setsid (a new session, so the
// terminal's Ctrl-C and hang-up do not reach the component) and forks the component, then exits;
// the component is reparented to init, which reaps it, so no zombie is left with the caller (the
// tests call this from a long-lived process). The component gets stdin from /dev/null, stdout and
// stderr appended to its log file, the default signal mask and dispositions, and no other file
// descriptor of the caller. Its pid comes back through a close-on-exec pipe, which also carries
// the errno of a failed exec, so "binary not executable" is an error here rather than a
// mysterious exit later.
//
// StopProcess sends SIGTERM, waits up to `grace` for the process to go, then SIGKILL (and waits
// up to 5 s more). The caller has already checked (pid_file.h) that the pid is the component's.
//
// Thread safety: StartDetached forks; between fork and exec only async-signal-safe calls are
// made, so it may be called while other threads run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

// Starts `binary` with `args` (argv[0] is `binary`) detached, output appended to `log_file`
// (created 0644 if missing). Returns the component's pid.
Result<pid_t> StartDetached(const std::string& binary, const std::vector<std::string>& args,
                            const std::string& log_file);

enum class StopOutcome {
  kAlreadyGone,  // Not alive when we looked.
  kTerminated,   // Exited after SIGTERM within the grace period.
  kKilled,       // Needed SIGKILL.
  kStuck,        // Still alive 5 s after SIGKILL (uninterruptible sleep?).
};

StopOutcome StopProcess(pid_t pid, std::chrono::milliseconds grace);

// Waits until `pid` is gone or `timeout` passes; true when gone.
bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace sluice::cli
