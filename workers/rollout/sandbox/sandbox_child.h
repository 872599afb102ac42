// The child side of RunSandboxed (sandboxed_process.h): what runs between fork and exec.
//
// Limits only (SandboxIsolation::kLimitsOnly): the forked child sets up descriptors, limits and
// the seccomp filter and executes the program.
//
// Namespaces: three processes.
//  - The keeper (the worker's child, in the worker's PID namespace; its process group is what the
//    worker kills at the wall limit) drops root to the unprivileged ids, unshares user, PID,
//    mount, IPC, UTS and network namespaces, maps its ids onto themselves, forks the init and
//    waits for it.
//  - The init (PID 1 of the new PID namespace; killed with the keeper through PR_SET_PDEATHSIG,
//    and the kernel then kills everything in the namespace) makes every mount read-only, covers
//    the hidden directories with empty tmpfs mounts, mounts a size-limited tmpfs on /tmp and a
//    fresh /proc, writes the input files into /tmp, forks the program and waits. When the program
//    ends it kills whatever it left behind, then sends the report (sandbox_report.h) with the
//    program's status and the collected files.
//  - The program's process sets its limits and the seccomp filter and executes the program, in
//    /tmp, as the unprivileged id with no capabilities.
// Each step that fails writes a ChildFailure (stage, errno) to the status pipe; exec closes it.
//
// Everything a child reads is prepared in ChildPlan before fork: a child of a multi-threaded
// process may only call async-signal-safe functions, so nothing here allocates.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace sluice::rollout {

// The steps of the children's setup, reported to the worker when one fails.
enum class ChildStage : int {
  kSetpgid = 1,
  kSignals,
  kDup,
  kChdir,
  kUserNamespaceMaps,
  kRlimit,
  kNoNewPrivs,
  kSeccomp,
  kExec,
  kDropPrivileges,
  kNamespaces,
  kReadOnlyMounts,
  kHideDirectories,
  kTmpMount,
  kProcMount,
  kInputFiles,
  kFork,
};

// Text for messages: "unshare of user, PID, mount, IPC, UTS and network namespaces".
const char* ChildStageName(ChildStage stage);

// Whether a failure at `stage` means the kernel (or the container runtime) refused the
// isolation itself, as opposed to a fault of this run.
bool IsIsolationStage(ChildStage stage);

struct ChildFailure {
  int stage = 0;
  int error = 0;
};

struct ChildInputFile {
  const char* name = nullptr;
  const char* data = nullptr;
  size_t size = 0;
  mode_t mode = 0644;
};

struct ChildRemount {
  const char* path = nullptr;
  unsigned long flags = 0;
};

inline constexpr int kChildRlimitCount = 5;

struct ChildPlan {
  const char* program = nullptr;  // The resolved path.
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* workdir = nullptr;  // Limits only; the namespaced program runs in /tmp.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;  // Write end; ChildFailure on failure, EOF (close-on-exec) on success.
  int report_fd = -1;  // Namespaces: write end of the report pipe (the init writes it).
  pid_t parent_pid = 0;
  int max_fd = 1024;  // For the fallback when close_range is unavailable.
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
  struct {
    int resource;
    rlimit value;
  } limits[kChildRlimitCount];
  sock_fprog filter{};

  // Namespaces only.
  bool drop_privileges = false;  // Running as root: become uid/gid below first.
  uid_t uid = 0;
  gid_t gid = 0;
  const ChildRemount* remounts = nullptr;
  size_t remount_count = 0;
  const char* const* hidden = nullptr;
  size_t hidden_count = 0;
  const char* tmp_options = nullptr;  // "size=<bytes>,mode=0700"
  const ChildInputFile* inputs = nullptr;
  size_t input_count = 0;
  const char* const* collect = nullptr;
  size_t collect_count = 0;
  int64_t max_file_bytes = 0;
};

// Both run in the child of fork() and never return.
[[noreturn]] void RunLimitedChild(const ChildPlan& plan);
[[noreturn]] void RunNamespacedKeeper(const ChildPlan& plan);

}  // namespace sluice::rollout
