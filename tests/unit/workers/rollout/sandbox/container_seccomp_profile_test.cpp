// The rollout container's seccomp profile that the chart ships (helm/sluice/files/
// rollout-seccomp.json, the operator's --rollout-seccomp-profile): the runtime's default profile
// denies the namespaced sandbox its unshare and mount, so the profile must allow them while still
// refusing the kernel interfaces a worker never needs. The test compiles the profile for this
// machine's ABI the way a runtime would (a denylist: default allow, named calls fail with their
// errno), installs it in a child process and runs the real sandbox there.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "workers/rollout/sandbox/sandboxed_process.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#endif

// Every name the profile may list, with its number on this ABI or -1 where the ABI lacks it
// (a runtime skips those, as libseccomp does). A name missing here fails the test: a typo in
// the profile would otherwise deny nothing.
const std::map<std::string, long>& KnownSyscalls() {
  static const std::map<std::string, long> table = [] {
    std::map<std::string, long> t;
    auto add = [&t](const char* name, long nr) { t[name] = nr; };
#define KNOWN(name) add(#name, SYS_##name)
#define UNKNOWN(name) add(#name, -1)
#ifdef SYS_acct
    KNOWN(acct);
#endif
#ifdef SYS_add_key
    KNOWN(add_key);
#endif
#ifdef SYS_bpf
    KNOWN(bpf);
#endif
#ifdef SYS_chroot
    KNOWN(chroot);
#endif
#ifdef SYS_clock_adjtime
    KNOWN(clock_adjtime);
#endif
#ifdef SYS_clock_settime
    KNOWN(clock_settime);
#endif
#ifdef SYS_create_module
    KNOWN(create_module);
#else
    UNKNOWN(create_module);
#endif
#ifdef SYS_delete_module
    KNOWN(delete_module);
#endif
#ifdef SYS_fanotify_init
    KNOWN(fanotify_init);
#endif
#ifdef SYS_finit_module
    KNOWN(finit_module);
#endif
#ifdef SYS_get_kernel_syms
    KNOWN(get_kernel_syms);
#else
    UNKNOWN(get_kernel_syms);
#endif
#ifdef SYS_init_module
    KNOWN(init_module);
#endif
#ifdef SYS_ioperm
    KNOWN(ioperm);
#else
    UNKNOWN(ioperm);
#endif
#ifdef SYS_iopl
    KNOWN(iopl);
#else
    UNKNOWN(iopl);
#endif
#ifdef SYS_kcmp
    KNOWN(kcmp);
#endif
#ifdef SYS_kexec_file_load
    KNOWN(kexec_file_load);
#else
    UNKNOWN(kexec_file_load);
#endif
#ifdef SYS_kexec_load
    KNOWN(kexec_load);
#endif
#ifdef SYS_keyctl
    KNOWN(keyctl);
#endif
#ifdef SYS_lookup_dcookie
    KNOWN(lookup_dcookie);
#endif
#ifdef SYS_name_to_handle_at
    KNOWN(name_to_handle_at);
#endif
#ifdef SYS_nfsservctl
    KNOWN(nfsservctl);
#endif
#ifdef SYS_open_by_handle_at
    KNOWN(open_by_handle_at);
#endif
#ifdef SYS_perf_event_open
    KNOWN(perf_event_open);
#endif
#ifdef SYS_pivot_root
    KNOWN(pivot_root);
#endif
#ifdef SYS_query_module
    KNOWN(query_module);
#else
    UNKNOWN(query_module);
#endif
#ifdef SYS_quotactl
    KNOWN(quotactl);
#endif
#ifdef SYS_reboot
    KNOWN(reboot);
#endif
#ifdef SYS_request_key
    KNOWN(request_key);
#endif
#ifdef SYS_setns
    KNOWN(setns);
#endif
#ifdef SYS_settimeofday
    KNOWN(settimeofday);
#endif
#ifdef SYS_swapoff
    KNOWN(swapoff);
#endif
#ifdef SYS_swapon
    KNOWN(swapon);
#endif
#ifdef SYS__sysctl
    KNOWN(_sysctl);
#else
    UNKNOWN(_sysctl);
#endif
#ifdef SYS_sysfs
    KNOWN(sysfs);
#else
    UNKNOWN(sysfs);
#endif
#ifdef SYS_syslog
    KNOWN(syslog);
#endif
#ifdef SYS_uselib
    KNOWN(uselib);
#else
    UNKNOWN(uselib);
#endif
#ifdef SYS_userfaultfd
    KNOWN(userfaultfd);
#endif
#ifdef SYS_ustat
    KNOWN(ustat);
#else
    UNKNOWN(ustat);
#endif
#undef KNOWN
#undef UNKNOWN
    // Numbers glibc's headers may predate (the same on every architecture since 5.1).
    add("io_uring_setup", 425);
    add("io_uring_enter", 426);
    add("io_uring_register", 427);
    add("open_tree", 428);
    add("move_mount", 429);
    add("fsopen", 430);
    add("fsconfig", 431);
    add("fsmount", 432);
    add("fspick", 433);
    add("mount_setattr", 442);
    add("quotactl_fd", 443);
    // 32-bit ABIs only.
    for (const char* name : {"clock_adjtime64", "clock_settime64", "stime", "vm86", "vm86old"}) {
      add(name, -1);
    }
    return t;
  }();
  return table;
}

json LoadProfile() {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const std::string path =
      std::string(root != nullptr ? root : ".") + "/helm/sluice/files/rollout-seccomp.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, false);
}

// The profile as a classic BPF program for this ABI: another architecture is allowed (only the
// native ABI is exercised here), a listed call fails with its rule's errnoRet, the rest run.
// Fails the test on anything outside the denylist shape the chart's profile keeps to.
std::vector<sock_filter> CompileForThisAbi(const json& profile) {
  EXPECT_EQ(profile.value("defaultAction", ""), "SCMP_ACT_ALLOW");
  std::vector<std::pair<long, int>> denied;  // (number, errno)
  for (const json& rule : profile.value("syscalls", json::array())) {
    EXPECT_EQ(rule.value("action", ""), "SCMP_ACT_ERRNO") << rule.dump();
    EXPECT_FALSE(rule.contains("args")) << rule.dump();
    const int errno_ret = rule.value("errnoRet", 1);
    for (const json& name : rule.value("names", json::array())) {
      auto it = KnownSyscalls().find(name.get<std::string>());
      EXPECT_NE(it, KnownSyscalls().end()) << "unknown system call " << name;
      if (it != KnownSyscalls().end() && it->second >= 0)
        denied.emplace_back(it->second, errno_ret);
    }
  }
  std::vector<sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  for (const auto& [nr, err] : denied) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K,
                            SECCOMP_RET_ERRNO | (static_cast<uint32_t>(err) & SECCOMP_RET_DATA)));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return prog;
}

std::set<std::string> DeniedNames(const json& profile) {
  std::set<std::string> names;
  for (const json& rule : profile.value("syscalls", json::array())) {
    for (const json& n : rule.value("names", json::array())) names.insert(n.get<std::string>());
  }
  return names;
}

TEST(ContainerSeccompProfileTest, DeniesKernelInterfacesButNotWhatTheSandboxNeeds) {
  const json profile = LoadProfile();
  ASSERT_TRUE(profile.is_object());
  const std::set<std::string> denied = DeniedNames(profile);
  // What RuntimeDefault withholds from a container without CAP_SYS_ADMIN and the sandbox uses.
  for (const char* needed : {"unshare", "clone", "clone3", "mount", "umount2", "sethostname",
                             "setresuid", "setresgid", "prctl", "seccomp", "pidfd_open"}) {
    EXPECT_EQ(denied.count(needed), 0u) << needed;
  }
  for (const char* refused : {"bpf", "kexec_load", "init_module", "keyctl", "perf_event_open",
                              "open_by_handle_at", "userfaultfd", "io_uring_setup", "setns"}) {
    EXPECT_EQ(denied.count(refused), 1u) << refused;
  }
  for (const char* arch : {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}) {
    const json& archs = profile["architectures"];
    EXPECT_NE(std::find(archs.begin(), archs.end(), json(arch)), archs.end()) << arch;
  }
  CompileForThisAbi(profile);  // Every name is known.
}

// sysfs(3), the number of file system types: a call anyone may make that the profile lists;
// -1 with ENOSYS where the ABI lacks it.
long CountFileSystemTypes() {
#ifdef SYS_sysfs
  return ::syscall(SYS_sysfs, 3);
#else
  errno = ENOSYS;
  return -1;
#endif
}

// In a child process: installs `filter` and runs the namespaced sandbox under it; the exit code
// says what failed (0: nothing).
int RunTheSandboxUnder(const std::vector<sock_filter>& filter, bool sysfs_works) {
  sock_fprog program{static_cast<unsigned short>(filter.size()),
                     const_cast<sock_filter*>(filter.data())};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) {
    return 2;
  }
  if (sysfs_works && (CountFileSystemTypes() != -1 || errno != EPERM)) return 3;
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo ran"};
  SandboxPolicy policy;
  policy.isolation = SandboxIsolation::kNamespaces;
  spec.policy = policy;
  Result<SandboxResult> r = RunSandboxed(spec);
  if (!r.ok()) {
    std::fprintf(stderr, "sandbox: %s\n", r.status().ToString().c_str());
    return 4;
  }
  if (!r->ok() || r->stdout_data != "ran\n") {
    std::fprintf(stderr, "program: %d %s %s\n", r->exit_code, r->stdout_data.c_str(),
                 r->stderr_data.c_str());
    return 5;
  }
  return 0;
}

// Under the profile, as in a container that the operator gives it, the namespaced sandbox runs a
// program with every namespace, and a call the profile lists fails with EPERM.
TEST(ContainerSeccompProfileDeathTest, TheSandboxRunsUnderTheProfile) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const json profile = LoadProfile();
  ASSERT_TRUE(profile.is_object());
  const std::vector<sock_filter> filter = CompileForThisAbi(profile);
  // sysfs(3) counts the file system types: it works unprivileged, so EPERM under the filter is
  // the profile's doing (where this machine's own profile denies it already, that check is moot).
  const bool sysfs_works = CountFileSystemTypes() > 0;
  EXPECT_EXIT(std::_Exit(RunTheSandboxUnder(filter, sysfs_works)), ::testing::ExitedWithCode(0),
              "");
}

}  // namespace
}  // namespace sluice::rollout
