#include "localcluster/cli/stop_component.h"

#include "localcluster/cli/pid_file.h"

namespace sluice::cli {

StopReport StopComponent(const KnownComponent& component, const StateLayout& layout,
                         std::chrono::milliseconds grace) {
  const std::string pid_file = layout.PidFile(component.name);
  const PidFileState state = InspectPidFile(pid_file, component.binary_name);
  StopReport report;
  report.pid = state.pid;
  if (state.verdict == PidVerdict::kNoPidFile) return report;
  if (state.stale()) {
    RemovePidFile(pid_file);
    report.kind = StopReportKind::kStalePidFile;
    return report;
  }
  switch (StopProcess(state.pid, grace)) {
    case StopOutcome::kAlreadyGone:
    case StopOutcome::kTerminated:
      report.kind = StopReportKind::kStopped;
      break;
    case StopOutcome::kKilled:
      report.kind = StopReportKind::kKilled;
      break;
    case StopOutcome::kStuck:
      report.kind = StopReportKind::kStuck;
      return report;  // Keep the pid file: it still runs.
  }
  RemovePidFile(pid_file);
  return report;
}

std::string DescribeStop(const std::string& component, const StopReport& report) {
  const std::string pid = " (pid " + std::to_string(report.pid) + ")";
  switch (report.kind) {
    case StopReportKind::kNotRunning:
      return component + ": not running";
    case StopReportKind::kStalePidFile:
      return component + ": not running (removed a stale pid file)";
    case StopReportKind::kStopped:
      return component + ": stopped" + pid;
    case StopReportKind::kKilled:
      return component + ": killed" + pid + " after it ignored SIGTERM";
    case StopReportKind::kStuck:
      return component + ": still running" + pid + " after SIGKILL";
  }
  return component;
}

}  // namespace sluice::cli
