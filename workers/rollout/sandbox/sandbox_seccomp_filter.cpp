#include "workers/rollout/sandbox/sandbox_seccomp_filter.h"

#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "common/check.h"

namespace sluice::rollout {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter is written for x86_64 and aarch64 only"
#endif

// A minimal classic-BPF assembler with forward labels, so the filter below reads as a list.
class BpfAssembler {
 public:
  static constexpr int kNext = -1;  // Fall through to the next instruction.

  int NewLabel() {
    labels_.push_back(-1);
    return static_cast<int>(labels_.size()) - 1;
  }
  void Bind(int label) { labels_[label] = static_cast<int>(code_.size()); }
  void Stmt(uint16_t code, uint32_t k) { code_.push_back(BPF_STMT(code, k)); }
  void Jump(uint16_t code, uint32_t k, int true_label, int false_label) {
    jumps_.push_back({code_.size(), true_label, false_label});
    code_.push_back(BPF_JUMP(code, k, 0, 0));
  }
  std::vector<sock_filter> Finish() {
    for (const PendingJump& j : jumps_) {
      code_[j.at].jt = Offset(j.at, j.true_label);
      code_[j.at].jf = Offset(j.at, j.false_label);
    }
    return code_;
  }

 private:
  struct PendingJump {
    size_t at;
    int true_label;
    int false_label;
  };
  uint8_t Offset(size_t at, int label) const {
    if (label == kNext) return 0;
    const int target = labels_[label];
    SLUICE_CHECK(target > static_cast<int>(at) && target - static_cast<int>(at) - 1 <= 255);
    return static_cast<uint8_t>(target - static_cast<int>(at) - 1);
  }

  std::vector<sock_filter> code_;
  std::vector<int> labels_;
  std::vector<PendingJump> jumps_;
};

// Namespace flags of clone(); CLONE_NEWTIME (0x80) overlaps clone()'s exit-signal byte and
// only clone3() and unshare() take it, both refused outright.
constexpr uint32_t kCloneNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET;

#define SLUICE_DENIED(name) \
  { #name, __NR_##name }

}  // namespace

std::vector<std::pair<std::string_view, long>> SandboxDeniedSyscalls() {
  std::vector<std::pair<std::string_view, long>> denied = {
      SLUICE_DENIED(ptrace),
      SLUICE_DENIED(process_vm_readv),
      SLUICE_DENIED(process_vm_writev),
      SLUICE_DENIED(mount),
      SLUICE_DENIED(umount2),
      SLUICE_DENIED(pivot_root),
      SLUICE_DENIED(chroot),
      SLUICE_DENIED(unshare),
      SLUICE_DENIED(setns),
      SLUICE_DENIED(keyctl),
      SLUICE_DENIED(add_key),
      SLUICE_DENIED(request_key),
      SLUICE_DENIED(bpf),
      SLUICE_DENIED(perf_event_open),
      SLUICE_DENIED(userfaultfd),
      SLUICE_DENIED(open_by_handle_at),
      SLUICE_DENIED(kexec_load),
      SLUICE_DENIED(init_module),
      SLUICE_DENIED(finit_module),
      SLUICE_DENIED(delete_module),
      SLUICE_DENIED(swapon),
      SLUICE_DENIED(swapoff),
      SLUICE_DENIED(reboot),
      SLUICE_DENIED(acct),
      SLUICE_DENIED(quotactl),
      SLUICE_DENIED(fanotify_init),
  };
#ifdef __NR_kexec_file_load
  denied.push_back(SLUICE_DENIED(kexec_file_load));
#endif
#ifdef __NR_open_tree
  denied.push_back(SLUICE_DENIED(open_tree));
  denied.push_back(SLUICE_DENIED(move_mount));
  denied.push_back(SLUICE_DENIED(fsopen));
  denied.push_back(SLUICE_DENIED(fsconfig));
  denied.push_back(SLUICE_DENIED(fsmount));
  denied.push_back(SLUICE_DENIED(fspick));
#endif
#ifdef __NR_mount_setattr
  denied.push_back(SLUICE_DENIED(mount_setattr));
#endif
  return denied;
}

#undef SLUICE_DENIED

std::vector<sock_filter> BuildSandboxSeccompFilter() {
  BpfAssembler a;
  const int deny_enosys = a.NewLabel();
  const int check_family = a.NewLabel();
  const int check_clone = a.NewLabel();
  const int allow = a.NewLabel();
  const int deny_eacces = a.NewLabel();
  const int deny_eperm = a.NewLabel();

  a.Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeAuditArch, BpfAssembler::kNext, deny_enosys);
  a.Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  constexpr uint32_t kX32SyscallBit = 0x40000000;
  a.Jump(BPF_JMP | BPF_JGE | BPF_K, kX32SyscallBit, deny_enosys, BpfAssembler::kNext);
#endif
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, check_family, BpfAssembler::kNext);
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, check_clone, BpfAssembler::kNext);
#ifdef __NR_io_uring_setup
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, deny_enosys, BpfAssembler::kNext);
#endif
#ifdef __NR_clone3
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, deny_enosys, BpfAssembler::kNext);
#endif
  for (const auto& [name, nr] : SandboxDeniedSyscalls()) {
    a.Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), deny_eperm, BpfAssembler::kNext);
  }
  a.Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

  // The family and the clone flags are ints: compare the low 32 bits of the 64-bit argument.
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr uint32_t kLowHalf = 0;
#else
  constexpr uint32_t kLowHalf = 4;
#endif
  a.Bind(check_family);
  a.Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]) + kLowHalf);
  a.Jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, allow, deny_eacces);

  a.Bind(check_clone);
  a.Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]) + kLowHalf);
  a.Jump(BPF_JMP | BPF_JSET | BPF_K, kCloneNamespaceFlags, deny_eperm, allow);

  a.Bind(allow);
  a.Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  a.Bind(deny_eacces);
  a.Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA));
  a.Bind(deny_eperm);
  a.Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
  a.Bind(deny_enosys);
  a.Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  return a.Finish();
}

}  // namespace sluice::rollout
