// The sandbox's seccomp filter (classic BPF, for SECCOMP_MODE_FILTER), written by hand against
// linux/filter.h and linux/seccomp.h so no libseccomp is needed:
//  - socket() fails with EACCES unless the family is AF_UNIX (pipes and socketpairs still work);
//  - io_uring_setup() fails with ENOSYS (io_uring's IORING_OP_SOCKET would open a socket without
//    calling socket());
//  - a syscall of a foreign ABI fails with ENOSYS: on x86_64 a process could otherwise reach the
//    i386 socketcall() through int 0x80, or use the x32 numbering (__X32_SYSCALL_BIT);
//  - everything else is allowed.
// Built for the native ABI only: x86_64 or aarch64 (another architecture fails to compile).
//
// Thread safety: a pure function.
#pragma once

#include <linux/filter.h>

#include <vector>

namespace sluice::rollout {

// The program; install it with prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sock_fprog) after
// prctl(PR_SET_NO_NEW_PRIVS, 1).
std::vector<sock_filter> BuildNetworkSeccompFilter();

}  // namespace sluice::rollout
