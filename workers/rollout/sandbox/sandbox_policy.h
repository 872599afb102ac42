// SandboxPolicy: how far a worker isolates the untrusted programs it runs (sandboxed_process.h),
// set once per process from the worker's flags and read by every RunSandboxed call.
//
// Isolation modes:
//  - kNamespaces (the default): every program runs in new user, PID, mount, IPC, UTS and network
//    namespaces. When the kernel refuses one (no unprivileged user namespaces, a container
//    runtime's seccomp profile that denies unshare), RunSandboxed refuses to run the program and
//    its error says which isolation is missing and how to allow the weaker mode.
//  - kBestEffort: namespaces where the kernel allows them, otherwise limits only (logged once).
//  - kLimitsOnly: never namespaces: resource limits, the seccomp filter and a fresh working
//    directory only. The program then runs as the worker's user: it can read what the worker can,
//    signal it, and a setsid() escapes the wall-time kill. Only for kernels without namespaces,
//    where the operator has accepted that.
//
// Thread safety: SetSandboxPolicy and CurrentSandboxPolicy may be called from any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::rollout {

enum class SandboxIsolation { kNamespaces, kBestEffort, kLimitsOnly };

// "namespaces", "best-effort", "limits-only" (the --sandbox-isolation flag's values).
std::string_view SandboxIsolationName(SandboxIsolation isolation);
std::optional<SandboxIsolation> ParseSandboxIsolation(std::string_view name);

struct SandboxPolicy {
  SandboxIsolation isolation = SandboxIsolation::kNamespaces;
  // Directories covered by an empty read-only tmpfs inside the sandbox's mount namespace (paths
  // that do not exist or are not directories are skipped; "/" is refused): where the worker's
  // tokens, configuration, weights and model caches are. /tmp is always replaced by the
  // program's own size-limited tmpfs.
  std::vector<std::string> hidden_directories = DefaultHiddenDirectories();
  // The ids the program runs as when the worker runs as root (in a pod the worker already runs
  // as an unprivileged user, and the program keeps that id inside its user namespace).
  uid_t unprivileged_uid = 65534;
  gid_t unprivileged_gid = 65534;

  // /run and /var/run (Kubernetes' ServiceAccount token and the experiment's token under
  // /var/run/sluice), /dev/shm, /etc/sluice (the worker's configuration), /var/lib/sluice
  // (weights volumes) and /root and /home.
  static std::vector<std::string> DefaultHiddenDirectories();
};

// The default hidden directories plus a worker's own: `directories` as they are and the parent
// directory of each of `files` (token files). Empty and relative paths and "/" are left out;
// each directory appears once.
std::vector<std::string> WorkerHiddenDirectories(const std::vector<std::string>& directories,
                                                 const std::vector<std::string>& files);

// InvalidArgument naming the field ("hidden_directories[2]") for a relative path or "/".
Status ValidateSandboxPolicy(const SandboxPolicy& policy);

// The process-wide policy; RunSandboxed uses it unless SandboxSpec::policy overrides it.
void SetSandboxPolicy(SandboxPolicy policy);
SandboxPolicy CurrentSandboxPolicy();

}  // namespace sluice::rollout
