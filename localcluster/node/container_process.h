// ContainerProcess: one container of a pod, run as a local Linux process.
//
// Start forks and execs `argv` with exactly `env` as its environment, in `working_dir`, in a
// new process group of its own (so a signal reaches every process the container started),
// stdin from /dev/null, stdout and stderr each to a pipe. One reader thread per pipe appends
// every output line to `log_file` in the CRI format (container_log.h), one write(2) per record,
// so a reader of the file sees each line as soon as it is produced:
//
//   2024-05-01T12:00:00.123456789Z stdout F hello
//
// Lines over 16 KiB are split into partial (P) records; output that ends without a newline is
// written as a P record.
//
// Exit: a container ends when its main process exits, as in Kubernetes where the kernel kills
// the rest of the container's PID namespace with its PID 1. So when the main process is found
// to have exited (TryWait, Wait, StopGracefully, the destructor), the rest of its process group
// is sent SIGKILL before the main process is reaped (the zombie still holds the group id, so
// the signal cannot reach an unrelated process). That also closes the pipes the remaining
// members held, so the reader threads reach EOF. A process that left the group (setsid) and
// keeps the pipes open is not tracked: the readers give up on it 2 s after the exit.
//
// Exit codes are Kubernetes style: the exit status, or 128 + the signal number when the
// process was killed by a signal (SIGKILL -> 137, SIGTERM -> 143).
//
// Ownership: the object owns the process, the pipes and the reader threads. Destroying it
// kills the process group (SIGKILL) if the main process still runs, reaps it and joins the
// readers. The log file is opened for append and only written to; it is never truncated or
// removed.
//
// Thread safety: every method may be called from any thread, concurrently. SIGCHLD must not be
// ignored (SIG_IGN) in the process, and nothing else may reap this child (waitpid(-1)).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::node {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path to the executable (no PATH).
  std::vector<std::pair<std::string, std::string>> env;  // The WHOLE environment.
  std::filesystem::path working_dir;                     // Empty: the caller's.
  std::filesystem::path log_file;                        // Appended to; created when missing.
};

class ContainerProcess {
 public:
  // Starts the process. Errors (nothing is left running): InvalidArgument for an empty argv or
  // a relative argv[0]; Internal when the log file cannot be opened or a pipe/fork fails;
  // NotFound when the executable does not exist ("exec /bin/nope: No such file or directory");
  // PermissionDenied when it is not executable; NotFound/Internal when working_dir cannot be
  // entered ("chdir /x: ..."). The message names the path and the errno text.
  static Result<std::unique_ptr<ContainerProcess>> Start(const ProcessSpec& spec);

  ~ContainerProcess();
  ContainerProcess(const ContainerProcess&) = delete;
  ContainerProcess& operator=(const ContainerProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Sends `sig` to the whole process group. No-op once the main process has been reaped.
  void Signal(int sig);

  // Non-blocking: the exit code once the main process has exited (then reaped, and the rest of
  // its group killed), nullopt while it runs. Keeps returning the code afterwards. -1 if the
  // process was reaped by someone else (which the contract above forbids).
  std::optional<int> TryWait();
  // Blocks until the main process exits and returns its exit code. Also waits (up to 2 s) for
  // the reader threads to write the last output to the log file.
  int Wait();
  // Waits up to `timeout` for the exit; the code, or nullopt if still running.
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  // Whether the main process has exited (TryWait().has_value()).
  bool Stopped() { return TryWait().has_value(); }

  // SIGTERM to the group, up to `grace` for the main process to exit, then SIGKILL to the
  // group; returns the exit code (Wait()). Returns at once with the code if it already exited.
  int StopGracefully(std::chrono::milliseconds grace);

  // Whether both reader threads have seen EOF (everything the container wrote is in the log).
  bool LogsComplete();

 private:
  ContainerProcess() = default;
  void ReadLoop(int fd, const char* stream);
  void WriteRecord(const char* stream, bool partial, std::string_view content);
  // Waits up to `timeout` (forever when nullopt) for the main process to become waitable.
  void WaitExitable(std::optional<std::chrono::milliseconds> timeout);
  bool WaitLogs(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int pidfd_ = -1;     // pidfd_open(pid), readable once the process exits; -1: poll instead.
  int log_fd_ = -1;    // O_APPEND.
  int wake_fd_ = -1;   // eventfd: tells the readers to stop waiting for EOF.
  std::mutex mu_;      // Guards exit_code_, reaping and readers_done_.
  std::mutex log_mu_;  // Serialises the readers' writes to log_fd_.
  std::condition_variable readers_cv_;
  std::optional<int> exit_code_;
  int readers_done_ = 0;
  std::thread stdout_reader_;
  std::thread stderr_reader_;
};

}  // namespace sluice::node
