// SandboxedProcess: runs an untrusted program (a model's Python or C++ answer) in a child process
// with resource limits and no network, and collects its output.
//
// Enforcement (Linux, nothing beyond what Debian's kernel and libc provide):
//  - CPU time: RLIMIT_CPU, rounded up to whole seconds (the kernel sends SIGXCPU at the limit,
//    then SIGKILL one second later). Per process: a child the program forks has its own budget.
//  - Memory: RLIMIT_AS (address space), so an allocation past the limit fails.
//  - Output size: RLIMIT_FSIZE for files; stdout/stderr are read through pipes and truncated at
//    max_output_bytes.
//  - Processes: RLIMIT_NPROC is not per-sandbox, so fork bombs are bounded by the wall limit and
//    the process group kill instead.
//  - Wall time: the parent kills the child's whole process group (SIGKILL) at wall_seconds. When
//    the program exits first, whatever it left running in its group is killed too. A process that
//    leaves the group (setsid) escapes both; there is no PID namespace.
//  - Network: a fresh network namespace (unshare(CLONE_NEWNET), or with CLONE_NEWUSER when not
//    privileged, mapping the caller's uid and gid onto themselves) when the kernel allows, and in
//    every case a seccomp filter (installed with PR_SET_NO_NEW_PRIVS) that makes socket() fail
//    with EACCES for every family except AF_UNIX, and io_uring_setup() fail with ENOSYS (io_uring
//    can open sockets without calling socket()). The filter admits only the native ABI (x86_64 or
//    aarch64); syscalls of another ABI (int 0x80, x32) fail with ENOSYS.
//  - Files: the program runs in a fresh temporary directory (mkdtemp under $TMPDIR or /tmp,
//    removed afterwards), with a minimal environment: PATH=/usr/local/bin:/usr/bin:/bin,
//    HOME and TMPDIR = that directory, LANG=C.UTF-8. No core files (RLIMIT_CORE 0).
//  - Other descriptors of the calling process are not inherited (close-on-exec is set on every
//    descriptor above stderr in the child), and the child's signal mask and ignored signals are
//    reset to the defaults.
//
// Cost: one fork of the calling process (page tables are copied, not memory), plus a network
// namespace when one can be created.
//
// Thread safety: RunSandboxed may be called from many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::rollout {

struct SandboxLimits {
  double cpu_seconds = 5;                       // CPU time of the program.
  double wall_seconds = 10;                     // Wall time before the process group is killed.
  int64_t memory_bytes = int64_t{512} << 20;    // Address-space limit.
  int64_t max_output_bytes = int64_t{1} << 20;  // Per stream; the rest is dropped.
  int64_t max_file_bytes = int64_t{16} << 20;   // Largest file the program may write.
};

struct SandboxSpec {
  // argv[0] is looked up in the sandbox's PATH (above) unless it contains a '/'; a relative path
  // such as "./prog" is relative to the working directory.
  std::vector<std::string> argv;
  // Files written into the working directory before the program starts (name -> contents);
  // names are plain file names (no '/', not "." or ".."), each at most once. Mode 0644.
  std::vector<std::pair<std::string, std::string>> files;
  // Names among `files` written with mode 0755 instead (a binary compiled by an earlier run).
  std::vector<std::string> executable_files;
  // Plain file names read back from the working directory after the program ends, into
  // SandboxResult::files (how a compile step hands its binary to the next run). A name that is
  // missing, not a regular file (a symlink, a FIFO) or larger than max_file_bytes is left out.
  std::vector<std::string> collect_files;
  std::string stdin_data;
  SandboxLimits limits;
  // Cancelling kills the process group; Run then returns Cancelled (checked every 50 ms).
  CancellationToken cancel;
};

struct SandboxResult {
  int exit_code = -1;             // When exited normally; -1 otherwise.
  int signal = 0;                 // The terminating signal, when killed.
  bool timed_out = false;         // Killed at the wall limit.
  bool cpu_exceeded = false;      // Killed by the CPU limit (SIGXCPU / SIGKILL from RLIMIT_CPU).
  std::string stdout_data;        // At most max_output_bytes.
  std::string stderr_data;        // At most max_output_bytes.
  bool output_truncated = false;  // stdout or stderr was cut at max_output_bytes.
  // The collect_files that were found, in the order asked (name -> contents).
  std::vector<std::pair<std::string, std::string>> files;
  double wall_seconds = 0;      // From fork to reaping.
  double cpu_seconds_used = 0;  // User + system time of the program (not of its children).
  bool ok() const { return exit_code == 0 && !timed_out && signal == 0; }
};

// Runs the program. Errors are the sandbox's own (InvalidArgument for an empty argv, a bad file
// name or a non-positive limit, naming the field; Internal when fork/pipe/mkdtemp fail or the
// child cannot set up its limits or seccomp filter; Cancelled when spec.cancel fired); the program
// failing is a result, not an error. A program that cannot be executed is a result with the
// reason in stderr_data and exit_code 127 (not found) or 126 (not executable), as a shell reports.
Result<SandboxResult> RunSandboxed(const SandboxSpec& spec);

}  // namespace sluice::rollout
