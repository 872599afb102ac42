#include "localcluster/cli/ensure_component.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "common/file/atomic_file.h"
#include "localcluster/cli/detached_process.h"
#include "localcluster/cli/health.h"
#include "localcluster/cli/pid_file.h"

namespace sluice::cli {
namespace {

std::string Basename(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Internal("cannot create " + dir + ": " + ec.message());
  return Status::Ok();
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void AppendBanner(const std::string& log_file, const ComponentSpec& c) {
  std::ofstream log(log_file, std::ios::app);
  log << "=== sluice up " << Now() << ": starting " << c.binary;
  for (const std::string& a : c.args) log << " " << a;
  log << "\n";
}

}  // namespace

bool IsExecutableFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

Result<EnsureResult> EnsureComponent(const ComponentSpec& c, const StateLayout& layout,
                                     std::chrono::milliseconds timeout, std::ostream& out) {
  const std::string pid_file = layout.PidFile(c.name);
  const PidFileState state = InspectPidFile(pid_file, Basename(c.binary));
  if (state.running()) {
    Status health = WaitHealthy(c.health, state.pid, timeout);
    if (!health.ok()) {
      return Status(health.code(), "already running (pid " + std::to_string(state.pid) + ") but " +
                                       health.message() + "; left alone (`sluice down` stops it)");
    }
    out << c.name << ": already running (pid " << state.pid << ")\n";
    return EnsureResult{EnsureOutcome::kAlreadyRunning, state.pid};
  }
  if (state.stale()) {
    out << c.name << ": removing stale pid file " << pid_file
        << (state.pid > 0 ? " (pid " + std::to_string(state.pid) + " is gone or another program)"
                          : " (unreadable)")
        << "\n";
    RemovePidFile(pid_file);
  }
  if (!IsExecutableFile(c.binary)) {
    if (c.optional) {
      out << c.name << ": skipped (" << c.binary << " does not exist yet)\n";
      return EnsureResult{EnsureOutcome::kSkipped, 0};
    }
    return Status::NotFound(c.binary +
                            " does not exist or is not executable (build it, or pass "
                            "--bin-dir)");
  }
  for (const std::string& dir : c.dirs) SLUICE_RETURN_IF_ERROR(MakeDir(dir));
  SLUICE_RETURN_IF_ERROR(MakeDir(layout.LogsDir()));
  SLUICE_RETURN_IF_ERROR(MakeDir(layout.RunDir()));
  for (const auto& [path, content] : c.files)
    SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(path, content));
  for (const std::string& path : c.remove_before_start) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  const std::string log_file = layout.LogFile(c.name);
  AppendBanner(log_file, c);
  SLUICE_ASSIGN_OR_RETURN(pid_t pid, StartDetached(c.binary, c.args, log_file));
  if (Status s = WritePidFile(pid_file, pid); !s.ok()) {
    StopProcess(pid, std::chrono::seconds(5));
    return s;
  }
  if (Status health = WaitHealthy(c.health, pid, timeout); !health.ok()) {
    StopProcess(pid, std::chrono::seconds(5));
    RemovePidFile(pid_file);
    return health;
  }
  out << c.name << ": started (pid " << pid << ")\n";
  return EnsureResult{EnsureOutcome::kStarted, pid};
}

}  // namespace sluice::cli
