#include "workers/rollout/sandbox/sandboxed_process.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "workers/rollout/sandbox/network_seccomp_filter.h"

namespace sluice::rollout {

namespace {

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

constexpr char kSandboxPath[] = "/usr/local/bin:/usr/bin:/bin";
// How long output is still read after the process group was killed: the pipes reach EOF at once
// unless a process escaped the group, and then we stop waiting for it.
constexpr auto kDrainAfterKill = std::chrono::milliseconds(200);
// Poll slice while a cancellation token must be watched or no pidfd reports the exit.
constexpr int kPollSliceMs = 50;
constexpr size_t kReadChunk = 64 * 1024;

// Real time for I/O timeouts and latencies; decisions read a sluice::Clock (common/clock.h).
using Steady = std::chrono::steady_clock;

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

Result<Pipe> MakePipe() {
  int fds[2];
  // O_CLOEXEC: a child another thread forks at the same moment must not keep our ends open.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Status::Internal(std::string("sandbox: pipe2: ") + std::strerror(errno));
  }
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// The working directory; removed (recursively) on destruction.
class TempDir {
 public:
  static Result<TempDir> Create() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = (base != nullptr && base[0] != '\0') ? base : "/tmp";
    tmpl += "/sluice-sandbox-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return Status::Internal("sandbox: mkdtemp " + tmpl + ": " + std::strerror(errno));
    }
    return TempDir(std::move(tmpl));
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir() {
    if (!path_.empty()) RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}

  static void RemoveTree(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::remove_all(path, ec);
    if (!ec) return;
    // The program may have left directories it cannot be descended into (chmod 000): give the
    // owner full access to every directory (symlinks are not followed), then retry.
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    for (auto it = fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::remove_all(path, ec);
  }

  std::string path_;
};

// Blocks SIGPIPE in the calling thread while the program's stdin is written, so writing to a pipe
// the program closed returns EPIPE instead of killing the worker, and discards the SIGPIPE that
// the write left pending (unless one was pending before).
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &old_mask_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;
  ~ScopedSigpipeBlock() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{};
        while (sigtimedwait(&sigpipe_, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  sigset_t sigpipe_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

// The steps of the child's setup, reported to the parent when one fails.
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
};

const char* StageName(ChildStage stage) {
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
  }
  return "setup";
}

struct ChildFailure {
  int stage = 0;
  int error = 0;
};

// Everything the child needs, prepared before fork: between fork and exec the child of a
// multi-threaded process may only call async-signal-safe functions, so nothing here allocates.
struct ChildPlan {
  const char* program = nullptr;  // The resolved path.
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* workdir = nullptr;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;  // Write end; ChildFailure on failure, EOF (close-on-exec) on success.
  pid_t parent_pid = 0;
  int max_fd = 1024;  // For the fallback when close_range is unavailable.
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
  struct {
    int resource;
    rlimit value;
  } limits[4];
  sock_fprog filter{};
};

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

bool WriteProcFile(const char* path, const char* text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t len = std::strlen(text);
  const bool ok = ::write(fd, text, len) == static_cast<ssize_t>(len);
  ::close(fd);
  return ok;
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildPlan& plan) {
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
  // No other descriptor of the worker (sockets, files) reaches the program.
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
#endif
  {
    for (int fd = 3; fd < plan.max_fd; ++fd) {
      if (fd != plan.status_fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }

  if (::chdir(plan.workdir) != 0) ChildFail(plan, ChildStage::kChdir, errno);

  // Best effort: a network namespace with nothing but a down loopback. Unprivileged, through a
  // user namespace that maps our own ids (files the program creates stay ours).
  if (::unshare(CLONE_NEWNET) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    if (!WriteProcFile("/proc/self/setgroups", "deny") ||
        !WriteProcFile("/proc/self/uid_map", plan.uid_map) ||
        !WriteProcFile("/proc/self/gid_map", plan.gid_map)) {
      ChildFail(plan, ChildStage::kUserNamespaceMaps, errno);
    }
  }

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

bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

Status ValidateSpec(const SandboxSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument("must not be empty", "argv");
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    if (spec.argv[i].find('\0') != std::string::npos) {
      return Status::InvalidArgument("contains a NUL byte", "argv[" + std::to_string(i) + "]");
    }
  }
  if (spec.argv[0].empty()) return Status::InvalidArgument("must not be empty", "argv[0]");
  std::set<std::string> names;
  for (size_t i = 0; i < spec.files.size(); ++i) {
    const std::string& name = spec.files[i].first;
    const std::string field = "files[" + std::to_string(i) + "].name";
    if (!IsPlainFileName(name)) {
      return Status::InvalidArgument("\"" + name + "\" is not a plain file name", field);
    }
    if (!names.insert(name).second) {
      return Status::InvalidArgument("\"" + name + "\" appears twice", field);
    }
  }
  for (size_t i = 0; i < spec.executable_files.size(); ++i) {
    if (names.count(spec.executable_files[i]) == 0) {
      return Status::InvalidArgument("\"" + spec.executable_files[i] + "\" is not one of the files",
                                     "executable_files[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < spec.collect_files.size(); ++i) {
    if (!IsPlainFileName(spec.collect_files[i])) {
      return Status::InvalidArgument("\"" + spec.collect_files[i] + "\" is not a plain file name",
                                     "collect_files[" + std::to_string(i) + "]");
    }
  }
  const SandboxLimits& l = spec.limits;
  if (!(l.cpu_seconds > 0) || !std::isfinite(l.cpu_seconds)) {
    return Status::InvalidArgument("must be a positive number", "limits.cpu_seconds");
  }
  if (!(l.wall_seconds > 0) || !std::isfinite(l.wall_seconds)) {
    return Status::InvalidArgument("must be a positive number", "limits.wall_seconds");
  }
  if (l.memory_bytes <= 0)
    return Status::InvalidArgument("must be positive", "limits.memory_bytes");
  if (l.max_output_bytes < 0) {
    return Status::InvalidArgument("must not be negative", "limits.max_output_bytes");
  }
  if (l.max_file_bytes < 0) {
    return Status::InvalidArgument("must not be negative", "limits.max_file_bytes");
  }
  return Status::Ok();
}

// argv[0] resolved against the sandbox's PATH; empty when not found there.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string_view path = kSandboxPath;
  while (!path.empty()) {
    const size_t colon = path.find(':');
    const std::string_view dir = path.substr(0, colon);
    path = colon == std::string_view::npos ? std::string_view() : path.substr(colon + 1);
    const std::string candidate = std::string(dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

Status WriteInputFile(const std::string& dir, const std::string& name, const std::string& data,
                      bool executable) {
  const std::string path = dir + "/" + name;
  const mode_t mode = executable ? 0755 : 0644;
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd.valid()) return Status::Internal("sandbox: create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("sandbox: write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  // The umask may have dropped bits.
  if (::fchmod(fd.get(), mode) != 0) {
    return Status::Internal("sandbox: chmod " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// A regular file of at most max_bytes, not through a symlink (the program controls the
// directory: a FIFO or a link to /dev/zero must not block or flood the worker).
std::optional<std::string> ReadOutputFile(const std::string& dir, const std::string& name,
                                          int64_t max_bytes) {
  const std::string path = dir + "/" + name;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > max_bytes) {
    return std::nullopt;
  }
  std::string data;
  char buf[kReadChunk];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(data.size()) > max_bytes) return std::nullopt;
  }
  return data;
}

rlim_t ClampToHard(int resource, rlim_t want) {
  rlimit current{};
  if (::getrlimit(resource, &current) == 0 && current.rlim_max != RLIM_INFINITY) {
    return std::min(want, current.rlim_max);
  }
  return want;
}

// One output stream of the program, read until EOF and kept up to a bound.
struct OutputStream {
  Fd fd;
  std::string* data = nullptr;
  size_t limit = 0;
  bool truncated = false;

  void ReadOnce() {
    char buf[kReadChunk];
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      fd.Close();
      return;
    }
    const size_t room = limit - std::min(limit, data->size());
    const size_t keep = std::min(room, static_cast<size_t>(n));
    data->append(buf, keep);
    if (keep < static_cast<size_t>(n)) truncated = true;  // Keep draining, drop the rest.
  }
};

// Whether the child has exited, without reaping it: while it is an unreaped zombie its pid (and
// so its process group id) cannot be reused, which keeps killpg(pid) safe.
bool HasExited(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

int MillisUntil(Steady::time_point when, Steady::time_point now) {
  if (when <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(when - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

}  // namespace

Result<SandboxResult> RunSandboxed(const SandboxSpec& spec) {
  SLUICE_RETURN_IF_ERROR(ValidateSpec(spec));
  if (spec.cancel.IsCancelled()) return Status::Cancelled("sandboxed run cancelled");
  const SandboxLimits& limits = spec.limits;

  SandboxResult result;
  const std::string program = ResolveProgram(spec.argv[0]);
  if (program.empty()) {
    result.exit_code = 127;
    result.stderr_data =
        "sandbox: " + spec.argv[0] + ": not found in PATH (" + kSandboxPath + ")\n";
    return result;
  }

  SLUICE_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  for (const auto& [name, data] : spec.files) {
    const bool executable = std::find(spec.executable_files.begin(), spec.executable_files.end(),
                                      name) != spec.executable_files.end();
    SLUICE_RETURN_IF_ERROR(WriteInputFile(dir.path(), name, data, executable));
  }

  // argv and envp as C arrays, built before fork.
  std::vector<std::string> env = {std::string("PATH=") + kSandboxPath, "HOME=" + dir.path(),
                                  "TMPDIR=" + dir.path(), "LANG=C.UTF-8"};
  std::vector<char*> argv_ptrs;
  for (const std::string& arg : spec.argv) argv_ptrs.push_back(const_cast<char*>(arg.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (const std::string& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  env_ptrs.push_back(nullptr);

  const std::string uid_map =
      std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1\n";
  const std::string gid_map =
      std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1\n";
  const std::vector<sock_filter> filter = BuildNetworkSeccompFilter();

  // RLIMIT_CPU counts whole seconds: the soft limit sends SIGXCPU, the hard one SIGKILL.
  const rlim_t cpu_limit =
      ClampToHard(RLIMIT_CPU, static_cast<rlim_t>(std::max(1.0, std::ceil(limits.cpu_seconds))));
  const rlim_t cpu_hard = ClampToHard(RLIMIT_CPU, cpu_limit + 1);
  const rlim_t mem = ClampToHard(RLIMIT_AS, static_cast<rlim_t>(limits.memory_bytes));
  const rlim_t fsize = ClampToHard(RLIMIT_FSIZE, static_cast<rlim_t>(limits.max_file_bytes));

  SLUICE_ASSIGN_OR_RETURN(Pipe in_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe out_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe err_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe status_pipe, MakePipe());

  ChildPlan plan;
  plan.program = program.c_str();
  plan.argv = argv_ptrs.data();
  plan.envp = env_ptrs.data();
  plan.workdir = dir.path().c_str();
  plan.stdin_fd = in_pipe.read.get();
  plan.stdout_fd = out_pipe.write.get();
  plan.stderr_fd = err_pipe.write.get();
  plan.status_fd = status_pipe.write.get();
  plan.parent_pid = ::getpid();
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    plan.max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 16));
  }
  plan.uid_map = uid_map.c_str();
  plan.gid_map = gid_map.c_str();
  plan.limits[0] = {RLIMIT_CPU, {cpu_limit, std::max(cpu_limit, cpu_hard)}};
  plan.limits[1] = {RLIMIT_AS, {mem, mem}};
  plan.limits[2] = {RLIMIT_FSIZE, {fsize, fsize}};
  plan.limits[3] = {RLIMIT_CORE, {0, 0}};
  plan.filter.len = static_cast<unsigned short>(filter.size());
  plan.filter.filter = const_cast<sock_filter*>(filter.data());

  ScopedSigpipeBlock sigpipe_block;
  // Every signal blocked across fork, so no handler of the worker runs in the child before it
  // resets them (as posix_spawn does).
  sigset_t all;
  sigset_t before_fork;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before_fork);
  const Steady::time_point start = Steady::now();
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(plan);
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &before_fork, nullptr);
  if (pid < 0) return Status::Internal(std::string("sandbox: fork: ") + std::strerror(fork_errno));

  // Also from this side, so killpg works even before the child has run.
  ::setpgid(pid, pid);
  in_pipe.read.Close();
  out_pipe.write.Close();
  err_pipe.write.Close();
  status_pipe.write.Close();

  // False when the child was reaped elsewhere (SIGCHLD ignored, or a waitpid(-1) in the worker):
  // its status is then unknown.
  const auto reap = [pid](int* status, rusage* usage) {
    while (true) {
      if (::wait4(pid, status, 0, usage) == pid) return true;
      if (errno != EINTR) return false;
    }
  };
  const Status reaped_elsewhere = Status::Internal(
      "sandbox: the child's exit status was collected elsewhere (is SIGCHLD ignored?)");

  // The child's setup: EOF when exec succeeded (close-on-exec), a ChildFailure otherwise.
  ChildFailure failure;
  ssize_t got;
  do {
    got = ::read(status_pipe.read.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    int status = 0;
    rusage usage{};
    if (!reap(&status, &usage)) return reaped_elsewhere;
    const auto stage = static_cast<ChildStage>(failure.stage);
    if (stage == ChildStage::kExec) {
      result.exit_code = failure.error == ENOENT ? 127 : 126;
      result.stderr_data =
          "sandbox: cannot execute " + program + ": " + std::strerror(failure.error) + "\n";
      result.wall_seconds = std::chrono::duration<double>(Steady::now() - start).count();
      return result;
    }
    return Status::Internal(std::string("sandbox: child setup failed at ") + StageName(stage) +
                            ": " + std::strerror(failure.error));
  }
  status_pipe.read.Close();

  Fd stdin_fd = std::move(in_pipe.write);
  ::fcntl(stdin_fd.get(), F_SETFL, O_NONBLOCK);
  size_t stdin_written = 0;
  if (spec.stdin_data.empty()) stdin_fd.Close();
  OutputStream out{std::move(out_pipe.read), &result.stdout_data,
                   static_cast<size_t>(limits.max_output_bytes)};
  OutputStream err{std::move(err_pipe.read), &result.stderr_data,
                   static_cast<size_t>(limits.max_output_bytes)};
#ifdef SYS_pidfd_open
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  Fd pidfd;
#endif

  enum class Phase { kRunning, kLeaderExited, kKilled };
  Phase phase = Phase::kRunning;
  bool cancelled = false;
  const Steady::time_point deadline =
      start + std::chrono::duration_cast<Steady::duration>(
                  std::chrono::duration<double>(limits.wall_seconds));
  Steady::time_point stop_reading = deadline;
  const auto kill_group = [&](Phase next) {
    ::killpg(pid, SIGKILL);  // The leader is unreaped, so the group id is still ours.
    stdin_fd.Close();
    phase = next;
  };

  while (true) {
    if (phase == Phase::kRunning && HasExited(pid)) {
      // Whatever the program left running in its group goes with it.
      kill_group(Phase::kLeaderExited);
    }
    if (phase != Phase::kRunning && !out.fd.valid() && !err.fd.valid()) break;
    const Steady::time_point now = Steady::now();
    if (phase == Phase::kRunning) {
      if (spec.cancel.IsCancelled() || now >= deadline) {
        cancelled = spec.cancel.IsCancelled();
        result.timed_out = !cancelled;
        kill_group(Phase::kKilled);
        stop_reading = now + kDrainAfterKill;
        continue;
      }
    } else if (now >= stop_reading) {
      break;  // Only a process that left the group still holds the pipes.
    }

    pollfd fds[4];
    nfds_t n = 0;
    int out_index = -1, err_index = -1, in_index = -1;
    if (out.fd.valid()) {
      out_index = static_cast<int>(n);
      fds[n++] = {out.fd.get(), POLLIN, 0};
    }
    if (err.fd.valid()) {
      err_index = static_cast<int>(n);
      fds[n++] = {err.fd.get(), POLLIN, 0};
    }
    if (stdin_fd.valid()) {
      in_index = static_cast<int>(n);
      fds[n++] = {stdin_fd.get(), POLLOUT, 0};
    }
    int timeout_ms = MillisUntil(phase == Phase::kRunning ? deadline : stop_reading, now);
    if (phase == Phase::kRunning) {
      if (pidfd.valid()) {
        fds[n++] = {pidfd.get(), POLLIN, 0};
      } else {
        timeout_ms = std::min(timeout_ms, kPollSliceMs);
      }
      if (spec.cancel.CanBeCancelled()) timeout_ms = std::min(timeout_ms, kPollSliceMs);
    }
    const int ready = ::poll(fds, n, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      const int poll_errno = errno;
      kill_group(Phase::kKilled);
      int status = 0;
      rusage usage{};
      (void)reap(&status, &usage);
      return Status::Internal(std::string("sandbox: poll: ") + std::strerror(poll_errno));
    }
    if (ready <= 0) continue;
    if (out_index >= 0 && fds[out_index].revents != 0) out.ReadOnce();
    if (err_index >= 0 && fds[err_index].revents != 0) err.ReadOnce();
    if (in_index >= 0 && fds[in_index].revents != 0) {
      if (fds[in_index].revents & (POLLERR | POLLHUP)) {
        stdin_fd.Close();  // The program closed its stdin.
      } else {
        const ssize_t w = ::write(stdin_fd.get(), spec.stdin_data.data() + stdin_written,
                                  spec.stdin_data.size() - stdin_written);
        if (w > 0) stdin_written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
            stdin_written == spec.stdin_data.size()) {
          stdin_fd.Close();  // Done, or EPIPE: the program does not want the rest.
        }
      }
    }
  }
  out.fd.Close();
  err.fd.Close();
  stdin_fd.Close();

  int status = 0;
  rusage usage{};
  if (!reap(&status, &usage)) return reaped_elsewhere;
  result.wall_seconds = std::chrono::duration<double>(Steady::now() - start).count();
  result.cpu_seconds_used =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  if (cancelled) return Status::Cancelled("sandboxed run cancelled");
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.cpu_exceeded =
      result.signal == SIGXCPU ||
      (result.signal == SIGKILL && result.cpu_seconds_used >= static_cast<double>(cpu_limit));
  result.output_truncated = out.truncated || err.truncated;
  for (const std::string& name : spec.collect_files) {
    std::optional<std::string> data = ReadOutputFile(dir.path(), name, limits.max_file_bytes);
    if (data) result.files.emplace_back(name, std::move(*data));
  }
  return result;
}

}  // namespace sluice::rollout
