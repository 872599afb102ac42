#include "workers/rollout/sandbox/sandboxed_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "common/file/read_file.h"
#include "common/logging/logger.h"
#include "workers/rollout/sandbox/mount_table.h"
#include "workers/rollout/sandbox/sandbox_child.h"
#include "workers/rollout/sandbox/sandbox_report.h"
#include "workers/rollout/sandbox/sandbox_seccomp_filter.h"

namespace sluice::rollout {

namespace {

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
  if (l.max_disk_bytes <= 0) {
    return Status::InvalidArgument("must be positive", "limits.max_disk_bytes");
  }
  // The init of the PID namespace counts as one.
  if (l.max_processes < 2) {
    return Status::InvalidArgument("must be at least 2", "limits.max_processes");
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

// Process-wide: once the kernel refused the namespaces, best-effort runs skip the attempt.
std::atomic<bool> g_namespaces_refused{false};

std::string IsolationRefusedMessage(const ChildFailure& failure) {
  return std::string("sandbox: the kernel refused ") +
         ChildStageName(static_cast<ChildStage>(failure.stage)) + " (" +
         std::strerror(failure.error) +
         "), so untrusted code is not run: without user, PID and mount namespaces it would run as "
         "the worker's user, read the worker's files and tokens, signal it, and escape the wall "
         "limit with setsid(). Allow unprivileged user namespaces (and unshare in the container's "
         "seccomp profile), or accept resource limits and the seccomp filter alone: the "
         "RolloutPool's spec.sandbox.isolation BestEffort or LimitsOnly (the worker's "
         "--sandbox-isolation=best-effort or limits-only)";
}

// Whether the input file `name` is written with mode 0755.
bool IsExecutableInput(const SandboxSpec& spec, const std::string& name) {
  return std::find(spec.executable_files.begin(), spec.executable_files.end(), name) !=
         spec.executable_files.end();
}

// What one namespaced run needs beyond the spec, kept alive across fork.
struct NamespacedSetup {
  std::vector<ReadOnlyRemount> remounts;
  std::vector<ChildRemount> child_remounts;
  std::vector<const char*> hidden;
  std::vector<ChildInputFile> inputs;
  std::vector<const char*> collect;
  std::string tmp_options;
};

Result<NamespacedSetup> PrepareNamespaced(const SandboxSpec& spec, const SandboxPolicy& policy) {
  NamespacedSetup setup;
  SLUICE_ASSIGN_OR_RETURN(std::string mountinfo, file::ReadWholeFile("/proc/self/mountinfo"));
  // Mounts under /tmp and the hidden directories are covered anyway.
  std::vector<std::string> covered = policy.hidden_directories;
  covered.push_back("/tmp");
  setup.remounts = ReadOnlyRemounts(mountinfo, covered);
  for (const ReadOnlyRemount& r : setup.remounts) {
    setup.child_remounts.push_back({r.path.c_str(), r.flags});
  }
  for (const std::string& dir : policy.hidden_directories) setup.hidden.push_back(dir.c_str());
  int64_t input_bytes = 0;
  for (const auto& [name, data] : spec.files) {
    const bool executable = IsExecutableInput(spec, name);
    setup.inputs.push_back(
        {name.c_str(), data.data(), data.size(), static_cast<mode_t>(executable ? 0755 : 0644)});
    input_bytes += static_cast<int64_t>(data.size());
  }
  for (const std::string& name : spec.collect_files) setup.collect.push_back(name.c_str());
  // The inputs come on top of what the program may write; tmpfs rounds up to whole pages.
  setup.tmp_options =
      "size=" + std::to_string(spec.limits.max_disk_bytes + input_bytes + (int64_t{64} << 10)) +
      ",mode=0700";
  return setup;
}

// One run in the given mode. When the namespaced setup was refused by the kernel, `*refused`
// holds the failure and the status says so.
Result<SandboxResult> RunOnce(const SandboxSpec& spec, const SandboxPolicy& policy, bool namespaced,
                              std::optional<ChildFailure>* refused) {
  const SandboxLimits& limits = spec.limits;
  SandboxResult result;
  const std::string program = ResolveProgram(spec.argv[0]);
  if (program.empty()) {
    result.exit_code = 127;
    result.stderr_data =
        "sandbox: " + spec.argv[0] + ": not found in PATH (" + kSandboxPath + ")\n";
    return result;
  }

  // Limits only: a working directory on the worker's file system. Namespaced: the program's
  // /tmp is a tmpfs of its own, filled by the init.
  std::optional<TempDir> dir;
  NamespacedSetup setup;
  if (namespaced) {
    SLUICE_ASSIGN_OR_RETURN(setup, PrepareNamespaced(spec, policy));
  } else {
    SLUICE_ASSIGN_OR_RETURN(TempDir created, TempDir::Create());
    dir.emplace(std::move(created));
    for (const auto& [name, data] : spec.files) {
      const bool executable = IsExecutableInput(spec, name);
      SLUICE_RETURN_IF_ERROR(WriteInputFile(dir->path(), name, data, executable));
    }
  }
  const std::string workdir = namespaced ? "/tmp" : dir->path();

  // argv and envp as C arrays, built before fork.
  std::vector<std::string> env = {std::string("PATH=") + kSandboxPath, "HOME=" + workdir,
                                  "TMPDIR=" + workdir, "LANG=C.UTF-8"};
  std::vector<char*> argv_ptrs;
  for (const std::string& arg : spec.argv) argv_ptrs.push_back(const_cast<char*>(arg.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (const std::string& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  env_ptrs.push_back(nullptr);

  // Root drops to the policy's unprivileged ids; anyone else keeps its own ids, mapped onto
  // themselves inside the user namespace.
  const bool drop_privileges = namespaced && ::geteuid() == 0;
  const uid_t uid = drop_privileges ? policy.unprivileged_uid : ::geteuid();
  const gid_t gid = drop_privileges ? policy.unprivileged_gid : ::getegid();
  const std::string uid_map = std::to_string(uid) + " " + std::to_string(uid) + " 1\n";
  const std::string gid_map = std::to_string(gid) + " " + std::to_string(gid) + " 1\n";
  const std::vector<sock_filter> filter = BuildSandboxSeccompFilter();

  // RLIMIT_CPU counts whole seconds: the soft limit sends SIGXCPU, the hard one SIGKILL.
  const rlim_t cpu_limit =
      ClampToHard(RLIMIT_CPU, static_cast<rlim_t>(std::max(1.0, std::ceil(limits.cpu_seconds))));
  const rlim_t cpu_hard = ClampToHard(RLIMIT_CPU, cpu_limit + 1);
  const rlim_t mem = ClampToHard(RLIMIT_AS, static_cast<rlim_t>(limits.memory_bytes));
  const rlim_t fsize = ClampToHard(RLIMIT_FSIZE, static_cast<rlim_t>(limits.max_file_bytes));
  // RLIMIT_NPROC counts every process of the user: per sandbox only inside its own user
  // namespace. Without one it would count the worker's threads, so it stays as it is.
  rlimit nproc{};
  ::getrlimit(RLIMIT_NPROC, &nproc);
  if (namespaced) {
    const rlim_t procs = ClampToHard(RLIMIT_NPROC, static_cast<rlim_t>(limits.max_processes));
    nproc = {procs, procs};
  }

  SLUICE_ASSIGN_OR_RETURN(Pipe in_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe out_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe err_pipe, MakePipe());
  SLUICE_ASSIGN_OR_RETURN(Pipe status_pipe, MakePipe());
  Pipe report_pipe;
  if (namespaced) {
    SLUICE_ASSIGN_OR_RETURN(report_pipe, MakePipe());
  }

  ChildPlan plan;
  plan.program = program.c_str();
  plan.argv = argv_ptrs.data();
  plan.envp = env_ptrs.data();
  plan.workdir = workdir.c_str();
  plan.stdin_fd = in_pipe.read.get();
  plan.stdout_fd = out_pipe.write.get();
  plan.stderr_fd = err_pipe.write.get();
  plan.status_fd = status_pipe.write.get();
  plan.report_fd = report_pipe.write.get();
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
  plan.limits[4] = {RLIMIT_NPROC, nproc};
  plan.filter.len = static_cast<unsigned short>(filter.size());
  plan.filter.filter = const_cast<sock_filter*>(filter.data());
  plan.drop_privileges = drop_privileges;
  plan.uid = uid;
  plan.gid = gid;
  plan.remounts = setup.child_remounts.data();
  plan.remount_count = setup.child_remounts.size();
  plan.hidden = setup.hidden.data();
  plan.hidden_count = setup.hidden.size();
  plan.tmp_options = setup.tmp_options.c_str();
  plan.inputs = setup.inputs.data();
  plan.input_count = setup.inputs.size();
  plan.collect = setup.collect.data();
  plan.collect_count = setup.collect.size();
  plan.max_file_bytes = limits.max_file_bytes;

  ScopedSigpipeBlock sigpipe_block;
  // Every signal blocked across fork, so no handler of the worker runs in the child before it
  // resets them (as posix_spawn does).
  sigset_t all;
  sigset_t before_fork;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before_fork);
  const Steady::time_point start = Steady::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (namespaced) RunNamespacedKeeper(plan);
    RunLimitedChild(plan);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &before_fork, nullptr);
  if (pid < 0) return Status::Internal(std::string("sandbox: fork: ") + std::strerror(fork_errno));

  // Also from this side, so killpg works even before the child has run.
  ::setpgid(pid, pid);
  in_pipe.read.Close();
  out_pipe.write.Close();
  err_pipe.write.Close();
  status_pipe.write.Close();
  report_pipe.write.Close();

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

  // The children's setup: EOF when exec succeeded (close-on-exec), a ChildFailure otherwise.
  ChildFailure failure;
  ssize_t got;
  do {
    got = ::read(status_pipe.read.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    // The keeper and the init may still be up (the init reports even a failed exec): end them.
    ::killpg(pid, SIGKILL);
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
    if (namespaced && IsIsolationStage(stage)) {
      *refused = failure;
      return Status::PermissionDenied(IsolationRefusedMessage(failure));
    }
    return Status::Internal(std::string("sandbox: child setup failed at ") + ChildStageName(stage) +
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
  std::string report_data;
  // The report is read whole (its bound is what the collected files may hold).
  OutputStream report{std::move(report_pipe.read), &report_data,
                      MaxSandboxReportBytes(spec.collect_files.size(), limits.max_file_bytes)};
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
    if (phase != Phase::kRunning && !out.fd.valid() && !err.fd.valid() && !report.fd.valid()) {
      break;
    }
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

    pollfd fds[5];
    nfds_t n = 0;
    int out_index = -1, err_index = -1, report_index = -1, in_index = -1;
    if (out.fd.valid()) {
      out_index = static_cast<int>(n);
      fds[n++] = {out.fd.get(), POLLIN, 0};
    }
    if (err.fd.valid()) {
      err_index = static_cast<int>(n);
      fds[n++] = {err.fd.get(), POLLIN, 0};
    }
    if (report.fd.valid()) {
      report_index = static_cast<int>(n);
      fds[n++] = {report.fd.get(), POLLIN, 0};
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
    if (report_index >= 0 && fds[report_index].revents != 0) report.ReadOnce();
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
  report.fd.Close();
  stdin_fd.Close();

  int status = 0;
  rusage usage{};
  if (!reap(&status, &usage)) return reaped_elsewhere;
  result.wall_seconds = std::chrono::duration<double>(Steady::now() - start).count();
  if (cancelled) return Status::Cancelled("sandboxed run cancelled");
  result.cpu_seconds_used =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  if (namespaced && !result.timed_out) {
    // The program's own status and CPU time come from the init's report.
    Result<SandboxReport> decoded =
        DecodeSandboxReport(report_data, spec.collect_files.size(), limits.max_file_bytes);
    if (!decoded.ok()) {
      return Status::Internal("sandbox: the sandbox's init ended without a full report (" +
                              decoded.status().message() + ")");
    }
    status = decoded->wait_status;
    result.cpu_seconds_used = decoded->cpu_seconds;
    for (auto& [index, contents] : decoded->files) {
      result.files.emplace_back(spec.collect_files[index], std::move(contents));
    }
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.cpu_exceeded =
      result.signal == SIGXCPU ||
      (result.signal == SIGKILL && result.cpu_seconds_used >= static_cast<double>(cpu_limit));
  result.output_truncated = out.truncated || err.truncated;
  if (!namespaced && !result.timed_out) {
    for (const std::string& name : spec.collect_files) {
      std::optional<std::string> data = ReadOutputFile(dir->path(), name, limits.max_file_bytes);
      if (data) result.files.emplace_back(name, std::move(*data));
    }
  }
  return result;
}

}  // namespace

Result<SandboxResult> RunSandboxed(const SandboxSpec& spec) {
  SLUICE_RETURN_IF_ERROR(ValidateSpec(spec));
  if (spec.cancel.IsCancelled()) return Status::Cancelled("sandboxed run cancelled");
  const SandboxPolicy policy = spec.policy ? *spec.policy : CurrentSandboxPolicy();
  SLUICE_RETURN_IF_ERROR(ValidateSandboxPolicy(policy));

  std::optional<ChildFailure> refused;
  const bool try_namespaces =
      policy.isolation == SandboxIsolation::kNamespaces ||
      (policy.isolation == SandboxIsolation::kBestEffort && !g_namespaces_refused.load());
  if (!try_namespaces) return RunOnce(spec, policy, /*namespaced=*/false, &refused);
  Result<SandboxResult> result = RunOnce(spec, policy, /*namespaced=*/true, &refused);
  if (refused && policy.isolation == SandboxIsolation::kBestEffort) {
    if (!g_namespaces_refused.exchange(true)) {
      log::Logger("sandbox").Warn(
          "namespaces refused: untrusted programs run with resource limits and the seccomp "
          "filter only (--sandbox-isolation=best-effort)",
          {{"reason", result.status().message()}});
    }
    return RunOnce(spec, policy, /*namespaced=*/false, &refused);
  }
  return result;
}

}  // namespace sluice::rollout
