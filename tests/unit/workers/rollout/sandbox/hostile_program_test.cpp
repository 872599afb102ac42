// Hostile programs against the namespaced sandbox (issue 23): each attack must fail or be killed
// and leave the worker (this test process) unharmed. A control run without the protection
// under test shows the attack would have worked, where that is safe to run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "workers/rollout/sandbox/sandbox_seccomp_filter.h"
#include "workers/rollout/sandbox/sandboxed_process.h"

namespace sluice::rollout {
namespace {

namespace fs = std::filesystem;

SandboxSpec Python(const std::string& program, SandboxIsolation isolation) {
  SandboxSpec spec;
  spec.argv = {"python3", "-c", program};
  SandboxPolicy policy;
  policy.isolation = isolation;
  spec.policy = policy;
  return spec;
}

SandboxSpec Python(const std::string& program) {
  return Python(program, SandboxIsolation::kNamespaces);
}

SandboxResult RunHostile(const SandboxSpec& spec) {
  Result<SandboxResult> result = RunSandboxed(spec);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? *result : SandboxResult{};
}

// A world-readable secret in a fresh directory under `parent`; removed on destruction.
class Secret {
 public:
  explicit Secret(const std::string& parent) {
    std::string tmpl = parent + "/sluice-secret-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr) << parent;
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    std::ofstream(dir_ + "/token") << "s3cret";
    ::chmod((dir_ + "/token").c_str(), 0644);
  }
  ~Secret() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }
  std::string file() const { return dir_ + "/token"; }

 private:
  std::string dir_;
};

std::string ReadAttempt(const std::string& path) {
  return "try:\n"
         "    print(open('" +
         path +
         "').read())\n"
         "except OSError as e:\n"
         "    print('refused', type(e).__name__)\n";
}

TEST(HostileProgramTest, CannotReadTokensOrTheWorkersFiles) {
  // /dev/shm is hidden by default; the other directory only when the policy says so (a
  // worker adds its token, weights and cache directories); /tmp is always the program's own.
  Secret in_shm("/dev/shm");
  Secret in_var_tmp("/var/tmp");
  Secret in_tmp("/tmp");
  const std::string program =
      ReadAttempt(in_shm.file()) + ReadAttempt(in_var_tmp.file()) + ReadAttempt(in_tmp.file());
  // The control: limits only, the secrets are there for the taking.
  SandboxResult open = RunHostile(Python(program, SandboxIsolation::kLimitsOnly));
  EXPECT_EQ(open.stdout_data, "s3cret\ns3cret\ns3cret\n") << open.stderr_data;

  SandboxSpec spec = Python(program);
  spec.policy->hidden_directories.push_back(in_var_tmp.dir());
  SandboxResult r = RunHostile(spec);
  EXPECT_EQ(r.stdout_data,
            "refused FileNotFoundError\nrefused FileNotFoundError\nrefused FileNotFoundError\n")
      << r.stderr_data;
}

TEST(HostileProgramTest, CannotSignalTraceOrInspectTheWorker) {
  // A process of the worker's (this test's) to aim at, besides the worker itself.
  const pid_t bystander = ::fork();
  ASSERT_GE(bystander, 0);
  if (bystander == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string pids = std::to_string(::getpid()) + ", " + std::to_string(bystander);
  const std::string program =
      "import ctypes, os, signal\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "for pid in (" +
      pids +
      "):\n"
      "    try:\n"
      "        os.kill(pid, signal.SIGKILL)\n"
      "        print('killed', pid)\n"
      "    except OSError as e:\n"
      "        print('kill', e.errno)\n"
      "    print('ptrace', libc.ptrace(16, pid, None, None), ctypes.get_errno())\n"
      "    try:\n"
      "        open('/proc/%d/environ' % pid).read()\n"
      "        print('read environ')\n"
      "    except OSError as e:\n"
      "        print('environ', type(e).__name__)\n"
      "os.kill(-1, signal.SIGKILL)\n";
  SandboxResult r = RunHostile(Python(program));
  // ESRCH (3): neither process exists in the program's PID namespace; ptrace is refused by the
  // seccomp filter before that (EPERM, 1).
  const std::string each = "kill 3\nptrace -1 1\nenviron FileNotFoundError\n";
  EXPECT_EQ(r.stdout_data, each + each) << r.stderr_data;
  // kill(-1) reached only the sandbox's own processes.
  EXPECT_EQ(::kill(bystander, 0), 0);
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
}

TEST(HostileProgramTest, AForkBombStopsAtTheProcessLimit) {
  SandboxSpec spec = Python(
      "import os, time\n"
      "n = 0\n"
      "try:\n"
      "    while True:\n"
      "        if os.fork() == 0:\n"
      "            time.sleep(30)\n"
      "            os._exit(0)\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('stopped', n, e.errno)\n");
  spec.limits.max_processes = 16;
  spec.limits.wall_seconds = 20;
  SandboxResult r = RunHostile(spec);
  EXPECT_TRUE(r.ok()) << r.stderr_data;
  EXPECT_FALSE(r.timed_out);
  // The keeper, the init and the program are three of the sixteen; EAGAIN (11) at the limit.
  EXPECT_EQ(r.stdout_data, "stopped 13 11\n") << r.stderr_data;
  EXPECT_LT(r.wall_seconds, 10.0);
  // The worker can still fork and run the next program.
  EXPECT_EQ(RunHostile(Python("print('next')")).stdout_data, "next\n");
}

// A sleep duration no other process uses, to find the program's sleepers from outside.
std::string HostileSleepArg(int n) {
  return "4" + std::to_string(::getpid() % 100000) + "." + std::to_string(n) + "3";
}

int CountHostileProcesses(const std::string& arg) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream cmdline(entry.path() / "cmdline");
    if (!cmdline) continue;
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text.find(arg) != std::string::npos) ++count;
  }
  return count;
}

TEST(HostileProgramTest, SetsidDoesNotOutliveTheRun) {
  // Leaves its process group and session, then the program exits...
  const std::string early = HostileSleepArg(1);
  SandboxResult r =
      RunHostile(Python("import subprocess\n"
                        "subprocess.Popen(['setsid', 'sleep', '" +
                        early + "'], start_new_session=True)\n"));
  EXPECT_TRUE(r.ok()) << r.stderr_data;
  // ...or the program hangs until the wall limit.
  const std::string late = HostileSleepArg(2);
  SandboxSpec hang = Python(
      "import subprocess, time\n"
      "subprocess.Popen(['setsid', 'sleep', '" +
      late +
      "'], start_new_session=True)\n"
      "time.sleep(60)\n");
  hang.limits.wall_seconds = 1;
  r = RunHostile(hang);
  EXPECT_TRUE(r.timed_out);
  for (const std::string& arg : {early, late}) {
    bool gone = false;
    for (int i = 0; i < 200 && !(gone = CountHostileProcesses(arg) == 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "a sleep " << arg << " outlived its sandbox";
  }
}

TEST(HostileProgramTest, WritesOutsideItsDirectoryFail) {
  // /var/tmp is writable by anyone on the host; in the sandbox every mount is read-only.
  const std::string target = "/var/tmp/sluice-sandbox-escape-" + std::to_string(::getpid());
  const std::string program =
      "try:\n"
      "    open('" +
      target +
      "', 'w').write('x')\n"
      "    print('wrote')\n"
      "except OSError as e:\n"
      "    print('refused', e.errno)\n";
  SandboxResult open = RunHostile(Python(program, SandboxIsolation::kLimitsOnly));
  EXPECT_EQ(open.stdout_data, "wrote\n") << open.stderr_data;
  fs::remove(target);
  SandboxResult r = RunHostile(Python(program));
  EXPECT_EQ(r.stdout_data, "refused 30\n") << r.stderr_data;  // EROFS
  EXPECT_FALSE(fs::exists(target));
}

TEST(HostileProgramTest, FillingTheDiskStopsAtItsOwnTmpfs) {
  SandboxSpec spec = Python(
      "import os\n"
      "total = 0\n"
      "try:\n"
      "    for i in range(10000):\n"
      "        with open('f%d' % i, 'wb') as f:\n"
      "            f.write(b'x' * (1 << 20))\n"
      "        total += 1\n"
      "except OSError as e:\n"
      "    print('full', e.errno, total <= 8)\n");
  spec.limits.max_disk_bytes = int64_t{8} << 20;
  SandboxResult r = RunHostile(spec);
  EXPECT_EQ(r.stdout_data, "full 28 True\n") << r.stderr_data;  // ENOSPC
}

TEST(HostileProgramTest, TheSeccompFilterRefusesKernelInterfaces) {
  std::string program =
      "import ctypes\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "for name, nr in [";
  for (const auto& [name, nr] : SandboxDeniedSyscalls()) {
    program += "('" + std::string(name) + "', " + std::to_string(nr) + "), ";
  }
  program +=
      "]:\n"
      "    r = libc.syscall(nr, 0, 0, 0, 0, 0)\n"
      "    if r != -1 or ctypes.get_errno() != 1:\n"
      "        print('allowed', name, r, ctypes.get_errno())\n"
      // clone() with a namespace flag (CLONE_NEWUSER); syscall 56 on x86_64, 220 on aarch64.
      "import platform\n"
      "clone = 56 if platform.machine() == 'x86_64' else 220\n"
      "print('clone', libc.syscall(clone, 0x10000000 | 17, 0, 0, 0, 0), ctypes.get_errno())\n";
  SandboxResult r = RunHostile(Python(program));
  EXPECT_EQ(r.stdout_data, "clone -1 1\n") << r.stderr_data;
}

TEST(HostileProgramTest, AllocatingPastTheMemoryLimitFails) {
  SandboxSpec spec = Python("x = bytearray(1 << 30)\nprint('allocated')\n");
  spec.limits.memory_bytes = int64_t{128} << 20;
  SandboxResult r = RunHostile(spec);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr_data.find("MemoryError"), std::string::npos) << r.stderr_data;
}

// Makes unshare() fail with EPERM in this process, as a container runtime's seccomp profile
// does when it denies namespaces.
void DenyUnshare() {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(code)), code};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) {
    std::_Exit(2);
  }
}

TEST(HostileProgramDeathTest, WithoutNamespacesUntrustedCodeIsRefusedUnlessAllowed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        DenyUnshare();
        Result<SandboxResult> refused = RunSandboxed(Python("print('ran')"));
        // A copy: status() returns by value, so a reference into it would dangle (ASan's
        // stack-use-after-scope found it).
        const std::string why = refused.status().message();
        if (refused.status().code() != StatusCode::kPermissionDenied ||
            why.find("unshare") == std::string::npos ||
            why.find("--sandbox-isolation=best-effort") == std::string::npos) {
          std::fprintf(stderr, "refusal: %s\n", refused.status().ToString().c_str());
          std::_Exit(3);
        }
        // Allowed explicitly: limits only.
        Result<SandboxResult> weak =
            RunSandboxed(Python("print('ran')", SandboxIsolation::kBestEffort));
        if (!weak.ok() || weak->stdout_data != "ran\n") std::_Exit(4);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sluice::rollout
