#include "localcluster/cli/logs_command.h"

#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/log_file.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

int RunLogs(const LogsOptions& options, std::ostream& out, std::ostream& err) {
  const StateLayout layout(AbsolutePath(options.state_dir, CurrentDirectory()));
  PrintLogOptions print;
  print.tail = options.tail;
  print.follow = options.follow;
  const std::string path = layout.LogFile(options.component);
  if (Status s = PrintLog(path, print, out); !s.ok()) {
    err << "sluice logs: no log for " << options.component << " yet: " << s.message() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace sluice::cli
