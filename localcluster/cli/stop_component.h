// StopComponent: what `sluice down` does for one component: if its pid file names a live
// process of its program, SIGTERM it, wait up to `grace`, then SIGKILL (detached_process.h);
// remove the pid file in every case. A stale pid file is only removed: the process it names, if
// any, is not the component's and is never signalled.
//
// Thread safety: not for concurrent use on the same state directory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "localcluster/cli/components.h"
#include "localcluster/cli/detached_process.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

enum class StopReportKind {
  kNotRunning,    // No pid file.
  kStalePidFile,  // A stale pid file was removed.
  kStopped,       // Exited on SIGTERM (or was gone by the time we signalled).
  kKilled,        // Needed SIGKILL.
  kStuck,         // Survived SIGKILL (the pid file is kept).
};

struct StopReport {
  StopReportKind kind = StopReportKind::kNotRunning;
  pid_t pid = 0;
};

StopReport StopComponent(const KnownComponent& component, const StateLayout& layout,
                         std::chrono::milliseconds grace);

// "apiserver: stopped (pid 4242)", "node: not running", ...
std::string DescribeStop(const std::string& component, const StopReport& report);

}  // namespace sluice::cli
