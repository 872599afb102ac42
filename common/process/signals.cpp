#include "common/process/signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

namespace sluice {
namespace {

// Only lock-free atomics may be touched from a signal handler.
static_assert(std::atomic<int>::is_always_lock_free);

std::atomic<bool> g_installed{false};
std::atomic<int> g_signal_count{0};
std::atomic<int> g_first_signal{0};
std::atomic<int> g_pipe_write{-1};

// Fixed strings: the handler may not format or allocate.
constexpr char kSecondSigint[] = "sluice: second SIGINT, exiting now\n";
constexpr char kSecondSigterm[] = "sluice: second SIGTERM, exiting now\n";

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

extern "C" void HandleShutdownSignal(int signal_number) {
  const int saved_errno = errno;
  if (g_signal_count.fetch_add(1) == 0) {
    g_first_signal.store(signal_number);
    const char byte = static_cast<char>(signal_number);
    WriteAll(g_pipe_write.load(), &byte, 1);
  } else {
    if (signal_number == SIGINT) {
      WriteAll(STDERR_FILENO, kSecondSigint, sizeof(kSecondSigint) - 1);
    } else {
      WriteAll(STDERR_FILENO, kSecondSigterm, sizeof(kSecondSigterm) - 1);
    }
    ::_exit(128 + signal_number);
  }
  errno = saved_errno;
}

Status Errno(const char* what) {
  return Status::Internal(std::string("installing shutdown signals: ") + what + ": " +
                          std::error_code(errno, std::generic_category()).message());
}

void WatchPipe(int read_fd, CancellationSource source) {
  char byte = 0;
  for (;;) {
    const ssize_t n = ::read(read_fd, &byte, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return;  // Cannot happen while the write end stays open; nothing sensible to do.
  }
  const int signal_number = static_cast<unsigned char>(byte);
  std::fprintf(stderr, "sluice: received %s, shutting down (send it again to exit immediately)\n",
               SignalName(signal_number).c_str());
  std::fflush(stderr);
  source.Cancel();
}

}  // namespace

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

int ShutdownSignal() { return g_first_signal.load(); }

Status InstallShutdownSignals(CancellationSource source) {
  if (g_installed.exchange(true)) {
    return Status::AlreadyExists("shutdown signals are already installed");
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");
  g_pipe_write.store(fds[1]);

  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (::sigaction(SIGPIPE, &ignore, nullptr) != 0) return Errno("sigaction(SIGPIPE)");

  // Start the watcher before the handlers: a signal in between still only writes to the pipe.
  try {
    std::thread(WatchPipe, fds[0], std::move(source)).detach();
  } catch (const std::system_error& e) {
    return Status::Internal(std::string("installing shutdown signals: thread: ") + e.what());
  }

  struct sigaction action = {};
  action.sa_handler = HandleShutdownSignal;
  sigemptyset(&action.sa_mask);
  // Each handler blocks the other signal while it runs, so two at once count in order.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;  // Interrupted reads and writes elsewhere resume, not EINTR.
  if (::sigaction(SIGTERM, &action, nullptr) != 0) return Errno("sigaction(SIGTERM)");
  if (::sigaction(SIGINT, &action, nullptr) != 0) return Errno("sigaction(SIGINT)");
  // A mask inherited from the parent process would otherwise hold the signals back forever.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  if (const int rc = ::pthread_sigmask(SIG_UNBLOCK, &shutdown_signals, nullptr); rc != 0) {
    errno = rc;  // pthread functions return the error instead of setting errno.
    return Errno("pthread_sigmask");
  }
  return Status::Ok();
}

}  // namespace sluice
