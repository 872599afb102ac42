#include "localcluster/cli/detached_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "localcluster/cli/pid_file.h"

namespace sluice::cli {
namespace {

// Writes all of `len` bytes, retrying on EINTR; async-signal-safe.
void WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    const ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// Reads up to `len` bytes until EOF; returns the count.
size_t ReadAll(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < len) {
    const ssize_t n = read(fd, p + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// In the component, before exec: everything async-signal-safe.
[[noreturn]] void ExecComponent(const char* binary, char* const* argv, int null_fd, int log_fd,
                                int report_fd) {
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  // Nothing else of the caller's leaks into the component: everything above stderr is closed on
  // exec (the report pipe already is).
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(sig, &dfl, nullptr);
  execv(binary, argv);
  const int err = errno;
  WriteAll(report_fd, &err, sizeof(err));
  _exit(127);
}

}  // namespace

Result<pid_t> StartDetached(const std::string& binary, const std::vector<std::string>& args,
                            const std::string& log_file) {
  // Everything the children need is prepared here, before fork.
  std::vector<std::string> words = args;
  words.insert(words.begin(), binary);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  const int log_fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Status::Internal("cannot open log file " + log_file + ": " + std::strerror(errno));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return Status::Internal(std::string("cannot open /dev/null: ") + std::strerror(errno));
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    close(log_fd);
    close(null_fd);
    return Status::Internal(std::string("pipe: ") + std::strerror(errno));
  }

  const pid_t child = fork();
  if (child < 0) {
    const int err = errno;
    close(log_fd);
    close(null_fd);
    close(report[0]);
    close(report[1]);
    return Status::Internal(std::string("fork: ") + std::strerror(err));
  }
  if (child == 0) {
    close(report[0]);
    setsid();
    const pid_t grandchild = fork();
    if (grandchild == 0) ExecComponent(binary.c_str(), argv.data(), null_fd, log_fd, report[1]);
    const int32_t pid = grandchild;  // -1 when the second fork failed.
    WriteAll(report[1], &pid, sizeof(pid));
    _exit(grandchild < 0 ? 1 : 0);
  }
  close(report[1]);
  close(log_fd);
  close(null_fd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int32_t pid = -1;
  const size_t got_pid = ReadAll(report[0], &pid, sizeof(pid));
  int exec_errno = 0;
  const size_t got_errno = ReadAll(report[0], &exec_errno, sizeof(exec_errno));
  close(report[0]);
  if (got_pid != sizeof(pid) || pid <= 0) {
    return Status::Internal("cannot start " + binary + ": fork failed");
  }
  if (got_errno == sizeof(exec_errno)) {
    return Status::Internal("cannot start " + binary + ": " + std::strerror(exec_errno));
  }
  return static_cast<pid_t>(pid);
}

bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // Reaps it when it happens to be our child (StartDetached's never are); ECHILD otherwise.
    int status = 0;
    waitpid(pid, &status, WNOHANG);
    if (!ProcessAlive(pid)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

StopOutcome StopProcess(pid_t pid, std::chrono::milliseconds grace) {
  if (!ProcessAlive(pid)) return StopOutcome::kAlreadyGone;
  if (kill(pid, SIGTERM) != 0 && errno == ESRCH) return StopOutcome::kAlreadyGone;
  if (WaitForExit(pid, grace)) return StopOutcome::kTerminated;
  kill(pid, SIGKILL);
  return WaitForExit(pid, std::chrono::seconds(5)) ? StopOutcome::kKilled : StopOutcome::kStuck;
}

}  // namespace sluice::cli
