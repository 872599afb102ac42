#include "localcluster/node/container_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "localcluster/node/container_log.h"

namespace sluice::node {

namespace {

#ifndef CLOSE_RANGE_CLOEXEC
constexpr unsigned kCloseRangeCloexec = 1U << 2;
#else
constexpr unsigned kCloseRangeCloexec = CLOSE_RANGE_CLOEXEC;
#endif

// What the child reports through the status pipe when it cannot exec.
struct ChildFailure {
  int stage;  // kStageChdir or kStageExec.
  int error;  // errno.
};
constexpr int kStageChdir = 1;
constexpr int kStageExec = 2;

// Async-signal-safe: used between fork and exec.
void ReportAndExit(int fd, int stage, int error) {
  const ChildFailure failure{stage, error};
  ssize_t ignored = ::write(fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(127);
}

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

Status ErrnoStatus(const std::string& what, int err) {
  const std::string message = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status::NotFound(message);
    case EACCES:
    case EPERM:
      return Status::PermissionDenied(message);
    default:
      return Status::Internal(message);
  }
}

}  // namespace

Result<std::unique_ptr<ContainerProcess>> ContainerProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument("a container needs a command");
  if (spec.argv[0].empty() || spec.argv[0][0] != '/') {
    return Status::InvalidArgument("the executable must be an absolute path, got \"" +
                                   spec.argv[0] + "\"");
  }
  // Everything the child needs is prepared before fork: it may only make async-signal-safe
  // calls (another thread may hold the allocator's lock at the moment of fork).
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  env_strings.reserve(spec.env.size());
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string working_dir = spec.working_dir.string();
  const char* wd = working_dir.empty() ? nullptr : working_dir.c_str();

  std::unique_ptr<ContainerProcess> p(new ContainerProcess());
  p->log_fd_ = ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (p->log_fd_ < 0) {
    return Status::Internal("cannot open log file " + spec.log_file.string() + ": " +
                            std::strerror(errno));
  }
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  int devnull = -1;
  auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &status[0], &status[1], &devnull}) {
      CloseFd(fd);
    }
  };
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(status, O_CLOEXEC) != 0) {
    const int e = errno;
    close_all();
    return Status::Internal(std::string("pipe: ") + std::strerror(e));
  }
  devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  p->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (devnull < 0 || p->wake_fd_ < 0) {
    const int e = errno;
    close_all();
    return Status::Internal(std::string("open /dev/null or eventfd: ") + std::strerror(e));
  }

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    return Status::Internal(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // Fails harmlessly.
    if (::dup2(devnull, 0) < 0) ReportAndExit(status[1], kStageExec, errno);
    if (::dup2(out[1], 1) < 0) ReportAndExit(status[1], kStageExec, errno);
    if (::dup2(err[1], 2) < 0) ReportAndExit(status[1], kStageExec, errno);
    if (wd != nullptr && ::chdir(wd) != 0) ReportAndExit(status[1], kStageChdir, errno);
    // Descriptors the parent opened without O_CLOEXEC must not leak into the container.
    ::syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec);
    ::execve(argv[0], argv.data(), envp.data());
    ReportAndExit(status[1], kStageExec, errno);
  }

  // Parent. Set the group here too, so it exists before Start returns whichever runs first.
  ::setpgid(pid, pid);
  CloseFd(&out[1]);
  CloseFd(&err[1]);
  CloseFd(&status[1]);
  CloseFd(&devnull);
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(status[0], &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  CloseFd(&status[0]);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    int ignored;
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    close_all();
    return failure.stage == kStageChdir ? ErrnoStatus("chdir " + working_dir, failure.error)
                                        : ErrnoStatus("exec " + spec.argv[0], failure.error);
  }

  p->pid_ = pid;
  p->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 on old kernels.
  if (p->pidfd_ >= 0) ::fcntl(p->pidfd_, F_SETFD, FD_CLOEXEC);
  for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  const int out_fd = out[0], err_fd = err[0];
  ContainerProcess* raw = p.get();
  p->stdout_reader_ = std::thread([raw, out_fd] { raw->ReadLoop(out_fd, "stdout"); });
  p->stderr_reader_ = std::thread([raw, err_fd] { raw->ReadLoop(err_fd, "stderr"); });
  return p;
}

ContainerProcess::~ContainerProcess() {
  if (pid_ > 0) {
    Signal(SIGKILL);  // No-op when it already exited.
    Wait();           // Reaps; lets the readers drain (bounded).
  }
  if (stdout_reader_.joinable()) stdout_reader_.join();
  if (stderr_reader_.joinable()) stderr_reader_.join();
  CloseFd(&pidfd_);
  CloseFd(&wake_fd_);
  CloseFd(&log_fd_);
}

void ContainerProcess::Signal(int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  // Holding mu_ keeps the main process from being reaped meanwhile: while it is unreaped its
  // pid (the group id) cannot be reused, so the signal cannot reach a stranger.
  if (exit_code_ || pid_ <= 0) return;
  ::kill(-pid_, sig);
}

std::optional<int> ContainerProcess::TryWait() {
  std::lock_guard<std::mutex> lock(mu_);
  if (exit_code_) return exit_code_;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  // WNOWAIT: look without reaping, so the group can still be killed safely.
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    exit_code_ = -1;  // ECHILD: reaped by someone else.
    return exit_code_;
  }
  if (info.si_pid == 0) return std::nullopt;
  ::kill(-pid_, SIGKILL);  // The rest of the container goes with its main process.
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      exit_code_ = -1;
      return exit_code_;
    }
  }
  exit_code_ = ExitCodeOf(status);
  return exit_code_;
}

void ContainerProcess::WaitExitable(std::optional<std::chrono::milliseconds> timeout) {
  if (pidfd_ >= 0) {
    pollfd fd{pidfd_, POLLIN, 0};
    const int ms = timeout ? static_cast<int>(std::max<int64_t>(0, timeout->count())) : -1;
    ::poll(&fd, 1, ms);  // EINTR: the caller loops.
    return;
  }
  std::chrono::milliseconds step(10);
  if (timeout && *timeout < step) step = *timeout;
  std::this_thread::sleep_for(step);
}

std::optional<int> ContainerProcess::WaitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<int> code = TryWait()) {
      WaitLogs(std::chrono::seconds(2));
      return code;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    WaitExitable(left + std::chrono::milliseconds(1));
  }
}

int ContainerProcess::Wait() {
  for (;;) {
    if (std::optional<int> code = TryWait()) {
      WaitLogs(std::chrono::seconds(2));
      return *code;
    }
    WaitExitable(std::nullopt);
  }
}

int ContainerProcess::StopGracefully(std::chrono::milliseconds grace) {
  if (TryWait()) return Wait();
  Signal(SIGTERM);
  if (std::optional<int> code = WaitFor(grace)) return *code;
  Signal(SIGKILL);
  return Wait();
}

bool ContainerProcess::LogsComplete() {
  std::lock_guard<std::mutex> lock(mu_);
  return readers_done_ == 2;
}

bool ContainerProcess::WaitLogs(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (readers_cv_.wait_for(lock, timeout, [this] { return readers_done_ == 2; })) return true;
  // Something outside the group still holds the pipes: stop waiting for their EOF.
  const uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;
  readers_cv_.wait(lock, [this] { return readers_done_ == 2; });
  return false;
}

void ContainerProcess::WriteRecord(const char* stream, bool partial, std::string_view content) {
  const std::string record =
      FormatCriRecord(std::chrono::system_clock::now(), stream, partial, content);
  std::lock_guard<std::mutex> lock(log_mu_);
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(log_fd_, record.data() + done, record.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // Disk full or similar: the line is lost, the container keeps running.
    }
    done += static_cast<size_t>(n);
  }
}

void ContainerProcess::ReadLoop(int fd, const char* stream) {
  std::string pending;  // Output after the last newline, at most kMaxLogRecordBytes.
  auto consume = [&](const char* data, size_t n) {
    pending.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(pending.data() + start, nl - start);
      while (line.size() > kMaxLogRecordBytes) {
        WriteRecord(stream, true, line.substr(0, kMaxLogRecordBytes));
        line.remove_prefix(kMaxLogRecordBytes);
      }
      WriteRecord(stream, false, line);
    }
    pending.erase(0, start);
    while (pending.size() > kMaxLogRecordBytes) {
      WriteRecord(stream, true, std::string_view(pending).substr(0, kMaxLogRecordBytes));
      pending.erase(0, kMaxLogRecordBytes);
    }
  };
  char buf[64 * 1024];
  bool woken = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      consume(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;  // EOF: every writer is gone.
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) break;
    if (woken) break;  // Told to stop and nothing more is readable now.
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents & POLLIN) woken = true;  // Drain what is readable, then stop.
  }
  if (!pending.empty()) WriteRecord(stream, true, pending);
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  ++readers_done_;
  readers_cv_.notify_all();
}

}  // namespace sluice::node
