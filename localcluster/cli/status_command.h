// `sluice status`: the components (from their pid files and a health probe each), then, when
// the API server runs, the nodes and the counts of Sluice resources (status_report.h renders
// them). Exit 1 when the API server is not running or cannot be read.
//
// Thread safety: a plain function.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

int RunStatus(const StatusOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
