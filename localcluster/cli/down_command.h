// `sluice down`: stop every component of the local cluster, in reverse start order
// (stop_component.h), and say what happened to each. Harmless when nothing runs (exit 0); exit
// 1 only when a process survived SIGKILL.
//
// Thread safety: not for concurrent use on the same state directory.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

int RunDown(const DownOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
