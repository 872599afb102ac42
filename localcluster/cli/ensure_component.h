// EnsureComponent: what `sluice up` does for one component (components.h): leave it alone when
// it already runs and is healthy, otherwise start it detached and wait until it is healthy.
//
//   1. The pid file names a live process of the component's program (pid_file.h): wait (up to
//      `timeout`) for it to be healthy and report kAlreadyRunning. If it never gets healthy, the
//      error says so and the process is left alone (this invocation did not start it).
//   2. A stale pid file is removed (and said so on `out`).
//   3. The binary is missing: kSkipped for an optional component, NotFound otherwise.
//   4. Otherwise: create its directories, write its files, remove its remove_before_start paths,
//      append a "starting" banner to its log, StartDetached, write the pid file, WaitHealthy.
//      If it does not become healthy it is stopped again (SIGTERM, 5 s, SIGKILL), its pid file
//      removed, and the error returned; its log (DIR/logs/<name>.log) says why.
//
// Messages for people go to `out` ("apiserver: started (pid 4242)"); errors are returned.
//
// Thread safety: not for concurrent use on the same state directory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ostream>

#include "common/status.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

enum class EnsureOutcome { kStarted, kAlreadyRunning, kSkipped };

struct EnsureResult {
  EnsureOutcome outcome = EnsureOutcome::kSkipped;
  pid_t pid = 0;  // Of the running component (kStarted, kAlreadyRunning).
};

// Whether `path` is an executable regular file.
bool IsExecutableFile(const std::string& path);

Result<EnsureResult> EnsureComponent(const ComponentSpec& component, const StateLayout& layout,
                                     std::chrono::milliseconds timeout, std::ostream& out);

}  // namespace sluice::cli
