// SandboxedProcess: runs an untrusted program (a model's Python or C++ answer) in a child process
// with resource limits and no network, and collects its output.
//
// Isolation (sandbox_policy.h decides which; sandbox_child.h has the process tree):
//  - Namespaces (the default): new user, PID, mount, IPC, UTS and network namespaces. A worker
//    running as root first drops to the policy's unprivileged ids (65534); any other worker's
//    program keeps the worker's ids, mapped onto themselves, with no capabilities. The PID
//    namespace shows the program only its own processes, so it cannot signal, ptrace or read
//    /proc of the worker, and when the program ends (or the wall limit kills the sandbox) the
//    kernel kills everything left in it, setsid() or not. The mount namespace makes every mount
//    read-only, covers the policy's hidden directories (tokens, configuration, weights) with
//    empty tmpfs mounts, mounts a fresh /proc, and gives the program its own /tmp: a tmpfs of
//    max_disk_bytes (plus the input files) that is its working directory, HOME and TMPDIR. The
//    network namespace has only a down loopback.
//  - Limits only (an explicit policy choice, or best-effort where the kernel refused the
//    namespaces): the program runs as the worker's user in a fresh directory under $TMPDIR or
//    /tmp (removed afterwards), with the limits and the seccomp filter below and nothing else;
//    max_processes and max_disk_bytes are not enforced there.
// In both modes:
//  - CPU time: RLIMIT_CPU, rounded up to whole seconds (the kernel sends SIGXCPU at the limit,
//    then SIGKILL one second later). Per process: a child the program forks has its own budget.
//  - Memory: RLIMIT_AS (address space), so an allocation past the limit fails.
//  - Output size: RLIMIT_FSIZE for files; stdout/stderr are read through pipes and truncated at
//    max_output_bytes.
//  - Processes (namespaces): RLIMIT_NPROC of max_processes, counted within the sandbox's user
//    namespace, so a fork bomb stops there.
//  - Wall time: the parent kills the child's process group (SIGKILL) at wall_seconds; with
//    namespaces that kills the sandbox's init and so the whole PID namespace. When the program
//    exits first, whatever it left running is killed too.
//  - System calls: a seccomp filter (sandbox_seccomp_filter.h, installed with
//    PR_SET_NO_NEW_PRIVS): socket() fails for every family except AF_UNIX, and ptrace, mount,
//    unshare, setns, keyctl, bpf, perf_event_open and their kin fail with EPERM.
//  - Environment: PATH=/usr/local/bin:/usr/bin:/bin, HOME and TMPDIR = the working directory,
//    LANG=C.UTF-8. No core files (RLIMIT_CORE 0).
//  - Other descriptors of the calling process are not inherited (close-on-exec is set on every
//    descriptor above stderr in the child), and the child's signal mask and ignored signals are
//    reset to the defaults.
//
// Cost: one fork of the calling process (page tables are copied, not memory); with namespaces
// two more small forks, the namespaces and about forty mount calls, a few milliseconds.
//
// Thread safety: RunSandboxed may be called from many threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/rollout/sandbox/sandbox_policy.h"

namespace sluice::rollout {

struct SandboxLimits {
  double cpu_seconds = 5;                       // CPU time of the program.
  double wall_seconds = 10;                     // Wall time before the process group is killed.
  int64_t memory_bytes = int64_t{512} << 20;    // Address-space limit.
  int64_t max_output_bytes = int64_t{1} << 20;  // Per stream; the rest is dropped.
  int64_t max_file_bytes = int64_t{16} << 20;   // Largest file the program may write.
  int64_t max_disk_bytes = int64_t{64} << 20;   // Size of the private /tmp (namespaces).
  int max_processes = 64;  // Processes and threads in the sandbox, its init included (namespaces).
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
  // The isolation; empty: the process-wide CurrentSandboxPolicy().
  std::optional<SandboxPolicy> policy;
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
// name or a non-positive limit, naming the field; PermissionDenied when the policy requires
// namespaces and the kernel refused them, saying which and how to allow the weaker mode; Internal
// when fork/pipe/mkdtemp fail or the child cannot set up its limits or seccomp filter; Cancelled
// when spec.cancel fired); the program
// failing is a result, not an error. A program that cannot be executed is a result with the
// reason in stderr_data and exit_code 127 (not found) or 126 (not executable), as a shell reports.
Result<SandboxResult> RunSandboxed(const SandboxSpec& spec);

}  // namespace sluice::rollout
