#include "localcluster/cli/down_command.h"

#include "localcluster/cli/components.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/stop_component.h"

namespace sluice::cli {

int RunDown(const DownOptions& options, std::ostream& out, std::ostream& err) {
  const StateLayout layout(AbsolutePath(options.state_dir, CurrentDirectory()));
  const std::vector<KnownComponent>& known = KnownComponents();
  int code = kExitOk;
  bool any = false;
  for (auto it = known.rbegin(); it != known.rend(); ++it) {
    const StopReport report = StopComponent(*it, layout, options.timeout);
    if (report.kind == StopReportKind::kNotRunning) continue;
    any = true;
    if (report.kind == StopReportKind::kStuck) {
      err << "sluice down: " << DescribeStop(it->name, report) << "\n";
      code = kExitFailure;
    } else {
      out << DescribeStop(it->name, report) << "\n";
    }
  }
  if (!any) out << "Nothing was running (state in " << layout.root() << ").\n";
  return code;
}

}  // namespace sluice::cli
