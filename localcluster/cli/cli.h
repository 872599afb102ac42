// RunCli: the `sluice` command's dispatcher. main() passes its arguments (without the program
// name), the environment and the standard streams; tests pass their own.
//
//   sluice --help | -h | help        the command list (exit 0)
//   sluice                           the command list on stderr (exit 2)
//   sluice COMMAND [args]            up, down, status, node, logs, run, plot (command_line.h)
//   sluice COMMAND --help            that command's flags (exit 0)
//   sluice nonsense                  `unknown command "nonsense"` and the known ones (exit 2)
//
// Usage errors are printed as "sluice COMMAND: <problem>" plus a pointer to --help, exit 2.
//
// Thread safety: not reentrant for the same state directory; otherwise a plain function.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/config/environment.h"

namespace sluice::cli {

int RunCli(const std::vector<std::string>& args, const config::Environment& env, std::ostream& out,
           std::ostream& err);

}  // namespace sluice::cli
