// `sluice up`: start the local cluster (see command_line.h for the flags, components.h for
// what runs, ensure_component.h for the per-component rule).
//
// Before anything starts, every required program and the cluster description must exist (so a
// missing sluice-node is reported at once, not after the API server was started). Components are
// then ensured in order; once the API server is healthy the CRDs are created or updated and
// waited for until Established. Failure rule: when a component does not become healthy (or the
// CRDs cannot be installed), the last 20 lines of its log are printed, every component this
// invocation started is stopped again (in reverse order), and the exit code is 1; components
// that were already running are left as they were.
//
// Thread safety: not for concurrent use on the same state directory.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

// Returns the exit code: 0, 1 (a component failed), 2 (a bad --config path).
int RunUp(const UpOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
