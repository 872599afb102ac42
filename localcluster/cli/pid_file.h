// Pid files: DIR/run/<component>.pid, and the decision whether one names a live process of the
// right program.
//
// A pid file is trusted only when the process it names exists, is not a zombie, and is the
// component's program: the basename of /proc/PID/exe (a " (deleted)" suffix, left by a rebuilt
// binary, is ignored) or of argv[0] from /proc/PID/cmdline equals the binary's name. Anything
// else is stale (the process died, or the pid was reused by another program) and `sluice up`
// replaces the file; a component is never signalled on the strength of a stale file.
//
// JudgePidFile is the pure decision (the process lookup is injected); InspectPidFile does the
// reading. Files hold the decimal pid and a newline, written atomically (temp file + rename).
//
// Thread safety: pure functions, plus file-system reads and writes in the I/O functions.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

// What /proc says about a process.
struct ProcessInfo {
  std::string exe;                // readlink /proc/PID/exe; "" when unreadable.
  std::vector<std::string> argv;  // /proc/PID/cmdline.
  bool zombie = false;            // State Z (exited, not yet reaped).
};

enum class PidVerdict {
  kNoPidFile,     // No file: the component was not started (or was stopped cleanly).
  kMalformed,     // The file does not hold a positive decimal pid: stale.
  kNotRunning,    // No such process, or a zombie: stale.
  kOtherProgram,  // The pid now belongs to another program: stale.
  kRunning,       // The component's process is alive.
};

struct PidFileState {
  PidVerdict verdict = PidVerdict::kNoPidFile;
  pid_t pid = 0;                  // The pid in the file, when it parsed.
  std::vector<std::string> argv;  // The running process's command line (kRunning only).

  bool running() const { return verdict == PidVerdict::kRunning; }
  // A file exists but must not be trusted.
  bool stale() const {
    return verdict != PidVerdict::kNoPidFile && verdict != PidVerdict::kRunning;
  }
};

using ProcessLookup = std::function<std::optional<ProcessInfo>(pid_t)>;

// "123\n" -> 123; nullopt for anything but a positive decimal pid (whitespace around allowed).
std::optional<pid_t> ParsePid(std::string_view text);

// Whether `process` runs the program named `binary_name` ("sluice-apiserver").
bool IsProgram(const ProcessInfo& process, std::string_view binary_name);

// The decision. `text` is the file's content (nullopt: no file); `lookup` answers for a pid
// (nullopt: no such process).
PidFileState JudgePidFile(const std::optional<std::string>& text, const ProcessLookup& lookup,
                          std::string_view binary_name);

// /proc/PID; nullopt when there is no such process.
std::optional<ProcessInfo> ReadProcessInfo(pid_t pid);

// Whether `pid` is alive (exists and is not a zombie).
bool ProcessAlive(pid_t pid);

// Reads the file and /proc and judges.
PidFileState InspectPidFile(const std::string& path, std::string_view binary_name);

Status WritePidFile(const std::string& path, pid_t pid);
// Removes the file; a missing file is fine.
void RemovePidFile(const std::string& path);

}  // namespace sluice::cli
