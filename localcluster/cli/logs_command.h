// `sluice logs COMPONENT [-f] [--tail N]`: prints DIR/logs/COMPONENT.log (log_file.h). Exit 1
// when there is no such log yet (unless following, which waits for it).
//
// Thread safety: a plain function.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

int RunLogs(const LogsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
