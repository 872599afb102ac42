#include "workers/rollout/sandbox/sandbox_policy.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace sluice::rollout {

namespace {

std::mutex& PolicyMutex() {
  static std::mutex mutex;
  return mutex;
}

SandboxPolicy& PolicySlot() {
  static SandboxPolicy policy;
  return policy;
}

}  // namespace

std::string_view SandboxIsolationName(SandboxIsolation isolation) {
  switch (isolation) {
    case SandboxIsolation::kNamespaces:
      return "namespaces";
    case SandboxIsolation::kBestEffort:
      return "best-effort";
    case SandboxIsolation::kLimitsOnly:
      return "limits-only";
  }
  return "namespaces";
}

std::optional<SandboxIsolation> ParseSandboxIsolation(std::string_view name) {
  for (SandboxIsolation isolation : {SandboxIsolation::kNamespaces, SandboxIsolation::kBestEffort,
                                     SandboxIsolation::kLimitsOnly}) {
    if (name == SandboxIsolationName(isolation)) return isolation;
  }
  return std::nullopt;
}

std::vector<std::string> SandboxPolicy::DefaultHiddenDirectories() {
  return {"/run", "/var/run", "/dev/shm", "/etc/sluice", "/var/lib/sluice", "/root", "/home"};
}

std::vector<std::string> WorkerHiddenDirectories(const std::vector<std::string>& directories,
                                                 const std::vector<std::string>& files) {
  std::vector<std::string> hidden = SandboxPolicy::DefaultHiddenDirectories();
  const auto add = [&hidden](std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty() || dir[0] != '/' || dir == "/") return;
    if (std::find(hidden.begin(), hidden.end(), dir) == hidden.end()) hidden.push_back(dir);
  };
  for (const std::string& dir : directories) add(dir);
  for (const std::string& file : files) {
    const size_t slash = file.rfind('/');
    if (slash != std::string::npos) add(file.substr(0, slash));
  }
  return hidden;
}

Status ValidateSandboxPolicy(const SandboxPolicy& policy) {
  for (size_t i = 0; i < policy.hidden_directories.size(); ++i) {
    const std::string& dir = policy.hidden_directories[i];
    const std::string field = "hidden_directories[" + std::to_string(i) + "]";
    if (dir.empty() || dir[0] != '/') {
      return Status::InvalidArgument("\"" + dir + "\" is not an absolute path", field);
    }
    if (dir.find_first_not_of('/') == std::string::npos) {
      return Status::InvalidArgument("the root directory cannot be hidden", field);
    }
    if (dir.find('\0') != std::string::npos) {
      return Status::InvalidArgument("contains a NUL byte", field);
    }
  }
  return Status::Ok();
}

void SetSandboxPolicy(SandboxPolicy policy) {
  std::lock_guard<std::mutex> lock(PolicyMutex());
  PolicySlot() = std::move(policy);
}

SandboxPolicy CurrentSandboxPolicy() {
  std::lock_guard<std::mutex> lock(PolicyMutex());
  return PolicySlot();
}

}  // namespace sluice::rollout
