#include "workers/rollout/sandbox/sandbox_child.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "workers/rollout/sandbox/sandbox_report.h"

namespace sluice::rollout {

namespace {

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

// What the init reads a collected file with; small, as it lives on the forked thread's stack.
constexpr size_t kCopyChunk = 16 * 1024;

[[noreturn]] void ChildFail(const ChildPlan& plan, ChildStage stage, int error) {
  const ChildFailure failure{static_cast<int>(stage), error};
  ssize_t unused = ::write(plan.status_fd, &failure, sizeof(failure));
  (void)unused;
  ::_exit(127);
}

// Makes `fd` the descriptor `target`, without close-on-exec.
bool MoveFd(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

bool WriteAll(int fd, const void* data, size_t size) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteProcFile(const char* path, const char* text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = WriteAll(fd, text, std::strlen(text));
  ::close(fd);
  return ok;
}

// The first steps of the forked child in both modes: signals, the parent-death signal, a process
// group of its own, the standard descriptors, and close-on-exec on every other descriptor.
void PrepareChild(const ChildPlan& plan) {
  // Handlers the worker installed must not run here; the parent blocked every signal around
  // fork, so reset dispositions first, then unblock.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
    ChildFail(plan, ChildStage::kSignals, errno);
  }
  // The worker dying must not leave the program running (the forking thread waits for it, so
  // this fires only when the whole worker goes).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != plan.parent_pid) ::_exit(127);

  if (::setpgid(0, 0) != 0) ChildFail(plan, ChildStage::kSetpgid, errno);

  if (!MoveFd(plan.stdin_fd, STDIN_FILENO) || !MoveFd(plan.stdout_fd, STDOUT_FILENO) ||
      !MoveFd(plan.stderr_fd, STDERR_FILENO)) {
    ChildFail(plan, ChildStage::kDup, errno);
  }
  // No other descriptor of the worker (sockets, files) reaches the program. The status and
  // report pipes were made close-on-exec by the worker already.
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
#endif
  {
    for (int fd = 3; fd < plan.max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
}

// Closes every descriptor above stderr except the status and report pipes: the keeper and the
// init never exec, so close-on-exec would not close the worker's other descriptors (among them
// the write end of the program's stdin, whose EOF the program waits for).
void CloseAllButPipes(const ChildPlan& plan) {
  const int keep_low = std::min(plan.status_fd, plan.report_fd);
  const int keep_high = std::max(plan.status_fd, plan.report_fd);
  const auto close_range = [&plan](int first, int last) {
    if (first > last) return;
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, static_cast<unsigned>(first), static_cast<unsigned>(last), 0U) ==
        0) {
      return;
    }
#endif
    for (int fd = first; fd <= std::min(last, plan.max_fd); ++fd) ::close(fd);
  };
  close_range(3, keep_low - 1);
  close_range(keep_low + 1, keep_high - 1);
  close_range(keep_high + 1, std::numeric_limits<int>::max());
}

// Limits, no new privileges, the seccomp filter, then the program.
[[noreturn]] void LimitAndExec(const ChildPlan& plan) {
  for (const auto& limit : plan.limits) {
    if (::setrlimit(limit.resource, &limit.value) != 0) {
      ChildFail(plan, ChildStage::kRlimit, errno);
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ChildFail(plan, ChildStage::kNoNewPrivs, errno);
  }
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.filter, 0, 0) != 0) {
    ChildFail(plan, ChildStage::kSeccomp, errno);
  }
  ::execve(plan.program, plan.argv, plan.envp);
  ChildFail(plan, ChildStage::kExec, errno);
}

// The init's mounts: every mount read-only, the hidden directories covered, a private /tmp and
// a /proc that shows only this PID namespace.
void MountSandboxView(const ChildPlan& plan) {
  // Nothing done here propagates back to the worker's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    ChildFail(plan, ChildStage::kReadOnlyMounts, errno);
  }
  for (size_t i = 0; i < plan.remount_count; ++i) {
    const ChildRemount& r = plan.remounts[i];
    // A mount point under a directory the namespace cannot enter (EACCES) is out of the
    // program's reach too; one that is gone (ENOENT) was covered by another mount.
    if (::mount(nullptr, r.path, nullptr, r.flags, nullptr) != 0 && errno != EACCES &&
        errno != ENOENT) {
      ChildFail(plan, ChildStage::kReadOnlyMounts, errno);
    }
  }
  for (size_t i = 0; i < plan.hidden_count; ++i) {
    struct stat st {};
    if (::lstat(plan.hidden[i], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (::mount("tmpfs", plan.hidden[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=4k,mode=0555") != 0 &&
        errno != EACCES) {
      ChildFail(plan, ChildStage::kHideDirectories, errno);
    }
  }
  if (::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, plan.tmp_options) != 0) {
    ChildFail(plan, ChildStage::kTmpMount, errno);
  }
  // A runtime that masks parts of /proc (as container runtimes do) makes the kernel refuse a
  // new proc mount in a user namespace; an empty /proc then hides the worker's processes.
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0 &&
      ::mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0555") != 0) {
    ChildFail(plan, ChildStage::kProcMount, errno);
  }
}

void WriteInputFiles(const ChildPlan& plan) {
  for (size_t i = 0; i < plan.input_count; ++i) {
    const ChildInputFile& file = plan.inputs[i];
    const int fd =
        ::open(file.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, file.mode);
    if (fd < 0) ChildFail(plan, ChildStage::kInputFiles, errno);
    // The umask may have dropped bits.
    if (!WriteAll(fd, file.data, file.size) || ::fchmod(fd, file.mode) != 0) {
      ChildFail(plan, ChildStage::kInputFiles, errno);
    }
    ::close(fd);
  }
}

// The collected files and the end record; false when the worker stopped reading.
bool SendCollectedFiles(const ChildPlan& plan) {
  char buffer[kCopyChunk];
  for (size_t i = 0; i < plan.collect_count; ++i) {
    const int fd = ::open(plan.collect[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > plan.max_file_bytes) {
      ::close(fd);
      continue;
    }
    SandboxReportFile record;
    record.index = static_cast<uint32_t>(i);
    record.size = static_cast<uint64_t>(st.st_size);
    if (!WriteAll(plan.report_fd, &record, sizeof(record))) return false;
    uint64_t left = record.size;
    while (left > 0) {
      const ssize_t n = ::read(fd, buffer, left < sizeof(buffer) ? left : sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      // Every process that could change the file is dead: a short file is a fault, and the
      // report stays incomplete.
      if (n <= 0 || !WriteAll(plan.report_fd, buffer, static_cast<size_t>(n))) return false;
      left -= static_cast<uint64_t>(n);
    }
    ::close(fd);
  }
  SandboxReportFile end;
  end.index = kSandboxReportEnd;
  return WriteAll(plan.report_fd, &end, sizeof(end));
}

// PID 1 of the sandbox's PID namespace.
[[noreturn]] void RunInit(const ChildPlan& plan) {
  // The keeper dies when the worker kills its process group (wall limit, cancellation); then so
  // does this init, and the kernel kills everything else in the namespace with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  MountSandboxView(plan);
  ::sethostname("sandbox", 7);
  if (::chdir("/tmp") != 0) ChildFail(plan, ChildStage::kChdir, errno);
  WriteInputFiles(plan);

  const pid_t program = ::fork();
  if (program < 0) ChildFail(plan, ChildStage::kFork, errno);
  if (program == 0) {
    // Its own session: kill(0, ...) in the program then reaches only its own processes, not
    // the keeper's process group outside the namespace.
    if (::setsid() < 0) ChildFail(plan, ChildStage::kSetpgid, errno);
    LimitAndExec(plan);
  }
  ::close(plan.status_fd);
  ::close(STDIN_FILENO);
  ::close(STDOUT_FILENO);
  ::close(STDERR_FILENO);

  // As init, every orphan of the namespace is reaped here too; the program's status is the one
  // that counts.
  SandboxReportHeader header;
  while (true) {
    int status = 0;
    rusage usage{};
    const pid_t pid = ::wait4(-1, &status, __WALL, &usage);
    if (pid == program) {
      header.wait_status = status;
      header.user_microseconds =
          static_cast<int64_t>(usage.ru_utime.tv_sec) * 1000000 + usage.ru_utime.tv_usec;
      header.system_microseconds =
          static_cast<int64_t>(usage.ru_stime.tv_sec) * 1000000 + usage.ru_stime.tv_usec;
      break;
    }
    if (pid < 0 && errno != EINTR) ::_exit(1);  // No report: the worker reports a fault.
  }
  // Whatever the program left running goes with it (kill(-1) from init spares only init).
  ::kill(-1, SIGKILL);
  while (::wait4(-1, nullptr, __WALL, nullptr) > 0 || errno == EINTR) {
  }
  if (!WriteAll(plan.report_fd, &header, sizeof(header)) || !SendCollectedFiles(plan)) {
    ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

const char* ChildStageName(ChildStage stage) {
  switch (stage) {
    case ChildStage::kSetpgid:
      return "setpgid";
    case ChildStage::kSignals:
      return "resetting signals";
    case ChildStage::kDup:
      return "dup2";
    case ChildStage::kChdir:
      return "chdir";
    case ChildStage::kUserNamespaceMaps:
      return "writing the user namespace's uid/gid maps";
    case ChildStage::kRlimit:
      return "setrlimit";
    case ChildStage::kNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS)";
    case ChildStage::kSeccomp:
      return "installing the seccomp filter";
    case ChildStage::kExec:
      return "execve";
    case ChildStage::kDropPrivileges:
      return "dropping root to the unprivileged user";
    case ChildStage::kNamespaces:
      return "unshare of user, PID, mount, IPC, UTS and network namespaces";
    case ChildStage::kReadOnlyMounts:
      return "making the mounts read-only in the mount namespace";
    case ChildStage::kHideDirectories:
      return "covering the hidden directories";
    case ChildStage::kTmpMount:
      return "mounting the private /tmp";
    case ChildStage::kProcMount:
      return "mounting /proc for the PID namespace";
    case ChildStage::kInputFiles:
      return "writing the input files";
    case ChildStage::kFork:
      return "fork";
  }
  return "setup";
}

bool IsIsolationStage(ChildStage stage) {
  switch (stage) {
    case ChildStage::kNamespaces:
    case ChildStage::kUserNamespaceMaps:
    case ChildStage::kReadOnlyMounts:
    case ChildStage::kHideDirectories:
    case ChildStage::kTmpMount:
    case ChildStage::kProcMount:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void RunLimitedChild(const ChildPlan& plan) {
  PrepareChild(plan);
  if (::chdir(plan.workdir) != 0) ChildFail(plan, ChildStage::kChdir, errno);
  LimitAndExec(plan);
}

[[noreturn]] void RunNamespacedKeeper(const ChildPlan& plan) {
  PrepareChild(plan);
  CloseAllButPipes(plan);
  if (plan.drop_privileges) {
    // Raw syscalls: they change only this thread's credentials, which is all this process has.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
        ::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0 ||
        ::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) {
      ChildFail(plan, ChildStage::kDropPrivileges, errno);
    }
    // A change of credentials clears the parent-death signal and the dumpable flag (without it
    // /proc/self/uid_map belongs to root and cannot be written).
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != plan.parent_pid) ::_exit(127);
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_NEWNET) != 0) {
    ChildFail(plan, ChildStage::kNamespaces, errno);
  }
  if (!WriteProcFile("/proc/self/setgroups", "deny") ||
      !WriteProcFile("/proc/self/uid_map", plan.uid_map) ||
      !WriteProcFile("/proc/self/gid_map", plan.gid_map)) {
    ChildFail(plan, ChildStage::kUserNamespaceMaps, errno);
  }
  const pid_t init = ::fork();
  if (init < 0) ChildFail(plan, ChildStage::kFork, errno);
  if (init == 0) RunInit(plan);
  ::close(plan.status_fd);
  ::close(plan.report_fd);
  ::close(STDIN_FILENO);
  ::close(STDOUT_FILENO);
  ::close(STDERR_FILENO);
  int status = 0;
  while (::waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

}  // namespace sluice::rollout
