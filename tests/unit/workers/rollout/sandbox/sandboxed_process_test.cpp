#include "workers/rollout/sandbox/sandboxed_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback_listener.h"

namespace sluice::rollout {
namespace {

// Every test runs under both isolations a worker can be configured with.
class SandboxedProcessTest : public ::testing::TestWithParam<SandboxIsolation> {
 protected:
  bool Namespaced() const { return GetParam() == SandboxIsolation::kNamespaces; }

  SandboxSpec Command(std::vector<std::string> argv, std::string stdin_data = "") const {
    SandboxSpec spec;
    spec.argv = std::move(argv);
    spec.stdin_data = std::move(stdin_data);
    SandboxPolicy policy;
    policy.isolation = GetParam();
    spec.policy = policy;
    return spec;
  }
};

SandboxResult RunOk(const SandboxSpec& spec) {
  Result<SandboxResult> result = RunSandboxed(spec);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? *result : SandboxResult{};
}

// Live (not zombie) processes on this machine with `arg` among their arguments; a sandboxed
// program's pids are its PID namespace's, so tests find its processes by a unique argument.
int CountLiveProcessesWithArg(const std::string& arg) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos || line.size() < paren + 3 || line[paren + 2] == 'Z' ||
        line[paren + 2] == 'X') {
      continue;
    }
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::istringstream args(text);
    for (std::string a; std::getline(args, a, '\0');) {
      if (a == arg) {
        ++count;
        break;
      }
    }
  }
  return count;
}

// Waits up to two seconds for the processes with `arg` to be gone.
bool ProcessesWithArgDie(const std::string& arg) {
  for (int i = 0; i < 200; ++i) {
    if (CountLiveProcessesWithArg(arg) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A sleep duration no other process on the machine uses, to find the program's sleepers.
std::string UniqueSleep() {
  static std::atomic<int> counter{0};
  return "3" + std::to_string(::getpid() % 100000) + "." + std::to_string(++counter) + "7";
}

TEST_P(SandboxedProcessTest, EchoesStdinToStdout) {
  SandboxResult r = RunOk(Command({"cat"}, "hello\nworld\n"));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "hello\nworld\n");
  EXPECT_EQ(r.stderr_data, "");
  EXPECT_FALSE(r.timed_out);
}

TEST_P(SandboxedProcessTest, LargeStdinAndStdoutDoNotDeadlock) {
  // More than a pipe buffer each way: stdin must be written while stdout is read.
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 100) big[i] = '\n';
  SandboxResult r = RunOk(Command({"cat"}, big));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stdout_data.size(), size_t{1} << 20);  // The default max_output_bytes.
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.stdout_data, big.substr(0, size_t{1} << 20));
}

TEST_P(SandboxedProcessTest, ReportsExitCodesAndStderr) {
  SandboxResult r = RunOk(Command({"sh", "-c", "echo oops >&2; exit 3"}));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.stderr_data, "oops\n");

  r = RunOk(Command({"sh", "-c", "kill -SEGV $$"}));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_FALSE(r.cpu_exceeded);
}

TEST_P(SandboxedProcessTest, ProgramNotFoundIsExitCode127) {
  SandboxResult r = RunOk(Command({"no-such-program-sluice"}));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.stderr_data.find("not found"), std::string::npos) << r.stderr_data;

  r = RunOk(Command({"./missing-binary"}));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.stderr_data.find("No such file"), std::string::npos) << r.stderr_data;
}

TEST_P(SandboxedProcessTest, WritesFilesIntoAFreshWorkDirAndRemovesIt) {
  SandboxSpec spec =
      Command({"sh", "-c",
               "cat in.txt; pwd; ./tool.sh; echo made > out.txt; "
               "mkdir -p sub/deeper && chmod 000 sub; test -x in.txt || echo noexec"});
  spec.files = {{"in.txt", "from the caller\n"}, {"tool.sh", "#!/bin/sh\necho tool ran\n"}};
  spec.executable_files = {"tool.sh"};
  spec.collect_files = {"out.txt", "never-written.txt"};
  SandboxResult r = RunOk(spec);
  ASSERT_TRUE(r.ok()) << r.stderr_data;
  std::istringstream lines(r.stdout_data);
  std::string first, dir, tool, noexec;
  std::getline(lines, first);
  std::getline(lines, dir);
  std::getline(lines, tool);
  std::getline(lines, noexec);
  EXPECT_EQ(first, "from the caller");
  EXPECT_EQ(tool, "tool ran");
  EXPECT_EQ(noexec, "noexec");
  if (Namespaced()) {
    EXPECT_EQ(dir, "/tmp");  // Its own tmpfs, gone with its mount namespace.
  } else {
    EXPECT_NE(dir.find("sluice-sandbox-"), std::string::npos) << dir;
    // The directory is gone, even with a subdirectory the program made unreadable.
    EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
  }
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].first, "out.txt");
  EXPECT_EQ(r.files[0].second, "made\n");
}

TEST_P(SandboxedProcessTest, EnvironmentIsMinimal) {
  SandboxResult r = RunOk(Command({"env"}));
  ASSERT_TRUE(r.ok());
  std::vector<std::string> names;
  std::istringstream lines(r.stdout_data);
  for (std::string line; std::getline(lines, line);)
    names.push_back(line.substr(0, line.find('=')));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"HOME", "LANG", "PATH", "TMPDIR"})) << r.stdout_data;
}

TEST_P(SandboxedProcessTest, WorkerDescriptorsAreNotInherited) {
  // A descriptor without close-on-exec in the worker must still not reach the program.
  const int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 3);
  SandboxResult r = RunOk(Command({"ls", "-l", "/proc/self/fd"}));
  ::close(fd);
  ASSERT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_NE(r.stdout_data.find("pipe:"), std::string::npos) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("/dev/null"), std::string::npos) << r.stdout_data;
}

TEST_P(SandboxedProcessTest, KillsAtTheWallLimit) {
  SandboxSpec spec = Command({"sleep", "30"});
  spec.limits.wall_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  SandboxResult r = RunOk(spec);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_FALSE(r.cpu_exceeded);
  EXPECT_GE(elapsed, 0.45);
  EXPECT_LT(elapsed, 5.0);
}

TEST_P(SandboxedProcessTest, EnforcesTheCpuLimit) {
  SandboxSpec spec = Command({"python3", "-c", "while True: pass"});
  spec.limits.cpu_seconds = 1;
  spec.limits.wall_seconds = 20;
  const auto start = std::chrono::steady_clock::now();
  SandboxResult r = RunOk(spec);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.cpu_exceeded) << "signal " << r.signal;
  EXPECT_TRUE(r.signal == SIGXCPU || r.signal == SIGKILL) << r.signal;
  EXPECT_GE(r.cpu_seconds_used, 0.9);
  EXPECT_LT(elapsed, 15.0);
}

TEST_P(SandboxedProcessTest, EnforcesTheMemoryLimit) {
  SandboxSpec spec =
      Command({"python3", "-c", "x = bytearray(2 << 30)\nprint('allocated', len(x))"});
  spec.limits.memory_bytes = int64_t{256} << 20;
  SandboxResult r = RunOk(spec);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.find("allocated"), std::string::npos);
  EXPECT_NE(r.stderr_data.find("MemoryError"), std::string::npos) << r.stderr_data;

  // The same program fits without the limit being that low.
  spec.argv = {"python3", "-c", "x = bytearray(64 << 20)\nprint('allocated', len(x))"};
  r = RunOk(spec);
  EXPECT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "allocated 67108864\n");
}

TEST_P(SandboxedProcessTest, LimitsFileSize) {
  SandboxSpec spec = Command({"sh", "-c", "head -c 2000000 /dev/zero > big; echo $?"});
  spec.limits.max_file_bytes = 100000;
  SandboxResult r = RunOk(spec);
  // head is killed by SIGXFSZ (or gets EFBIG); the shell reports a failure status.
  EXPECT_NE(r.stdout_data, "0\n") << r.stderr_data;
}

TEST_P(SandboxedProcessTest, TruncatesOutputButKeepsDraining) {
  SandboxSpec spec = Command({"sh", "-c", "yes abcdefgh | head -c 5000000; echo done >&2"});
  spec.limits.max_output_bytes = 1000;
  SandboxResult r = RunOk(spec);
  EXPECT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data.size(), 1000u);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.stdout_data.substr(0, 9), "abcdefgh\n");
  EXPECT_EQ(r.stderr_data, "done\n");
}

// A TCP listener on 127.0.0.1 in the test's own network namespace; counts connections.
class Listener {
 public:
  Listener() {
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listener_.fd(), POLLIN, 0};
        if (::poll(&p, 1, 50) == 1) {
          const int c = ::accept(listener_.fd(), nullptr, nullptr);
          if (c >= 0) {
            ++accepted_;
            ::close(c);
          }
        }
      }
    });
  }
  ~Listener() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return listener_.port(); }
  int accepted() const { return accepted_; }

 private:
  test_support::LoopbackListener listener_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST_P(SandboxedProcessTest, BlocksTheNetwork) {
  Listener listener;
  // Sanity: the listener is reachable from outside the sandbox.
  {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(listener.port()));
    ASSERT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(s);
    for (int i = 0; i < 100 && listener.accepted() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(listener.accepted(), 1);
  }
  const std::string program =
      "import socket, sys\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
      std::to_string(listener.port()) +
      "), timeout=2)\n"
      "    print('connected')\n"
      "except OSError as e:\n"
      "    print('blocked', e.errno)\n"
      "for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n"
      "    try:\n"
      "        socket.socket(family, socket.SOCK_RAW if family == socket.AF_PACKET else "
      "socket.SOCK_DGRAM)\n"
      "        print('socket', family)\n"
      "    except OSError as e:\n"
      "        print('denied', e.errno)\n"
      "a, b = socket.socketpair(socket.AF_UNIX)\n"
      "a.sendall(b'unix ok')\n"
      "print(b.recv(16).decode())\n";
  SandboxResult r = RunOk(Command({"python3", "-c", program}));
  ASSERT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "blocked 13\ndenied 13\ndenied 13\ndenied 13\ndenied 13\nunix ok\n");
  EXPECT_EQ(listener.accepted(), 1);

  // A plain socket(AF_INET, SOCK_STREAM) from a C program fails too (python3's ctypes calls libc).
  r = RunOk(Command({"python3", "-c",
                     "import ctypes, ctypes.util\n"
                     "libc = ctypes.CDLL(None, use_errno=True)\n"
                     "print(libc.socket(2, 1, 0), ctypes.get_errno())\n"
                     "print(libc.socket(1, 1, 0) >= 0)\n"
                     // io_uring_setup (425 on x86_64 and aarch64) could open sockets too.
                     "print(libc.syscall(425, 1, None), ctypes.get_errno())\n"}));
  ASSERT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "-1 13\nTrue\n-1 38\n");
}

TEST_P(SandboxedProcessTest, KillsTheWholeProcessGroupAtTheWallLimit) {
  // The program forks children that would outlive it, then hangs.
  const std::string sleep = UniqueSleep();
  SandboxSpec spec = Command({"python3", "-c",
                              "import os, sys, time\n"
                              "for _ in range(8):\n"
                              "    if os.fork() == 0:\n"
                              "        os.execvp('sleep', ['sleep', '" +
                                  sleep +
                                  "'])\n"
                                  "print('forked', flush=True)\n"
                                  "time.sleep(60)\n"});
  spec.limits.wall_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  SandboxResult r = RunOk(spec);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.stdout_data, "forked\n");
  EXPECT_TRUE(ProcessesWithArgDie(sleep)) << CountLiveProcessesWithArg(sleep) << " left";
}

TEST_P(SandboxedProcessTest, BackgroundProcessesDieWithTheProgram) {
  // The shell exits at once; the background sleep holding stdout open is killed with it rather
  // than keeping the run alive until the wall limit.
  const std::string sleep = UniqueSleep();
  SandboxSpec spec = Command({"sh", "-c", "sleep " + sleep + " & echo started"});
  spec.limits.wall_seconds = 20;
  SandboxResult r = RunOk(spec);
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5.0);
  EXPECT_EQ(r.stdout_data, "started\n");
  EXPECT_TRUE(ProcessesWithArgDie(sleep));
}

TEST_P(SandboxedProcessTest, CancellationKillsTheProgram) {
  CancellationSource source;
  SandboxSpec spec = Command({"sleep", "30"});
  spec.cancel = source.Token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    source.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  Result<SandboxResult> r = RunSandboxed(spec);
  canceller.join();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST_P(SandboxedProcessTest, ConcurrentRunsFromManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kRunsPerThread = 5;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &good] {
      for (int i = 0; i < kRunsPerThread; ++i) {
        const std::string payload = "thread " + std::to_string(t) + " run " + std::to_string(i);
        SandboxSpec spec = Command({"sh", "-c", "cat; cat data.txt"}, payload + "\n");
        spec.files = {{"data.txt", payload + " file\n"}};
        Result<SandboxResult> r = RunSandboxed(spec);
        if (r.ok() && r->ok() && r->stdout_data == payload + "\n" + payload + " file\n") ++good;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good.load(), kThreads * kRunsPerThread);
}

TEST_P(SandboxedProcessTest, RejectsABadSpec) {
  EXPECT_EQ(RunSandboxed(SandboxSpec{}).status().field(), "argv");

  SandboxSpec spec = Command({"true"});
  spec.files = {{"../escape", "x"}};
  EXPECT_EQ(RunSandboxed(spec).status().field(), "files[0].name");
  spec.files = {{"a", "x"}, {"a", "y"}};
  EXPECT_EQ(RunSandboxed(spec).status().field(), "files[1].name");
  spec.files = {{"a", "x"}};
  spec.executable_files = {"b"};
  EXPECT_EQ(RunSandboxed(spec).status().field(), "executable_files[0]");
  spec.executable_files = {};
  spec.collect_files = {"dir/file"};
  EXPECT_EQ(RunSandboxed(spec).status().field(), "collect_files[0]");
  spec.collect_files = {};
  spec.limits.wall_seconds = 0;
  Status status = RunSandboxed(spec).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.field(), "limits.wall_seconds");
  spec.limits = SandboxLimits{};
  spec.limits.max_processes = 1;
  EXPECT_EQ(RunSandboxed(spec).status().field(), "limits.max_processes");
  spec.limits = SandboxLimits{};
  spec.limits.max_disk_bytes = 0;
  EXPECT_EQ(RunSandboxed(spec).status().field(), "limits.max_disk_bytes");
  spec.limits = SandboxLimits{};
  spec.policy->hidden_directories = {"/"};
  EXPECT_EQ(RunSandboxed(spec).status().field(), "hidden_directories[0]");
}

INSTANTIATE_TEST_SUITE_P(Isolation, SandboxedProcessTest,
                         ::testing::Values(SandboxIsolation::kNamespaces,
                                           SandboxIsolation::kLimitsOnly),
                         [](const ::testing::TestParamInfo<SandboxIsolation>& info) {
                           return info.param == SandboxIsolation::kNamespaces ? "Namespaces"
                                                                              : "LimitsOnly";
                         });

}  // namespace
}  // namespace sluice::rollout
