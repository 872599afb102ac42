// The sandbox's seccomp filter (classic BPF, for SECCOMP_MODE_FILTER), written by hand against
// linux/filter.h and linux/seccomp.h so no libseccomp is needed:
//  - socket() fails with EACCES unless the family is AF_UNIX (pipes and socketpairs still work);
//  - io_uring_setup() fails with ENOSYS (io_uring's IORING_OP_SOCKET would open a socket without
//    calling socket());
//  - a syscall of a foreign ABI fails with ENOSYS: on x86_64 a process could otherwise reach the
//    i386 socketcall() through int 0x80, or use the x32 numbering (__X32_SYSCALL_BIT);
//  - clone3() fails with ENOSYS (its flags sit in memory the filter cannot read; libc then falls
//    back to clone()), and clone() with a CLONE_NEW* flag fails with EPERM;
//  - the calls that reach other processes or the kernel's shared state fail with EPERM:
//    ptrace, process_vm_readv/writev, mount and the new mount API, umount2, pivot_root, chroot,
//    unshare, setns, keyctl, add_key, request_key, bpf, perf_event_open, userfaultfd,
//    open_by_handle_at, kexec and module loading, swapon/swapoff, reboot, acct, quotactl,
//    fanotify_init (SandboxDeniedSyscalls() lists them);
//  - everything else is allowed. kill() and its kin are not filtered: in the sandbox's PID
//    namespace the only processes a program can name are its own (sandboxed_process.h).
// Built for the native ABI only: x86_64 or aarch64 (another architecture fails to compile).
//
// Thread safety: pure functions.
#pragma once

#include <linux/filter.h>

#include <string_view>
#include <utility>
#include <vector>

namespace sluice::rollout {

// The program; install it with prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sock_fprog) after
// prctl(PR_SET_NO_NEW_PRIVS, 1).
std::vector<sock_filter> BuildSandboxSeccompFilter();

// The syscalls the filter refuses with EPERM whatever their arguments: (name, number) for the
// native ABI, only those this architecture has.
std::vector<std::pair<std::string_view, long>> SandboxDeniedSyscalls();

}  // namespace sluice::rollout
