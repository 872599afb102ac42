// Exec credential plugins (client.authentication.k8s.io v1 and v1beta1): the kubeconfig `exec`
// stanza that EKS (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`) and AKS (`kubelogin`)
// use to mint short-lived bearer tokens.
//
// ExecCredentialProvider runs the plugin with its args and extra environment (plus
// KUBERNETES_EXEC_INFO describing the request), stdin from /dev/null (interactive plugins are
// not supported: an operator has no terminal), parses the ExecCredential it prints, and caches
// the token until `status.expirationTimestamp` (forever when absent). A 401 from the API server
// calls Invalidate(token), which drops that token so the next Token() runs the plugin again.
// Plugins returning client certificates are refused with a clear error (certificates are fixed
// per connection pool here).
//
// Ownership: the provider owns its config; share it with std::shared_ptr.
// Thread safety: Token and Invalidate may be called from any thread; one plugin run at a time.
// Units: `timeout` is wall time for one plugin run.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace sluice::kube {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1beta1[] = "client.authentication.k8s.io/v1beta1";

struct ExecConfig {
  std::string api_version;  // kExecApiV1 or kExecApiV1beta1; anything else is refused.
  std::string command;      // Looked up on PATH unless it contains a '/'.
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // Added to the operator's environment.
  std::string install_hint;                              // Shown when the command cannot be run.
  std::string interactive_mode;  // "Never", "IfAvailable" or "Always" (refused).
};

struct ExecCredential {
  std::string token;
  std::optional<Clock::WallTime> expiration;  // Absent: valid until the server says otherwise.
};

// Parses a plugin's stdout. The apiVersion must equal `expected_api_version`, kind must be
// ExecCredential, and status.token must be present. Errors say which rule failed.
Result<ExecCredential> ParseExecCredential(std::string_view text,
                                           std::string_view expected_api_version);

struct CommandOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Runs `argv[0]` (PATH lookup) with `argv`, the current environment plus `extra_env`, stdin from
// /dev/null, and collects stdout and stderr (each capped at 1 MiB). Killed (SIGKILL) after
// `timeout`, which is DeadlineExceeded.
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::pair<std::string, std::string>>& extra_env,
                                 std::chrono::milliseconds timeout);

class ExecCredentialProvider {
 public:
  // `clock` decides expiry (its wall time) and must outlive the provider.
  ExecCredentialProvider(ExecConfig config, const Clock& clock,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ExecCredentialProvider(const ExecCredentialProvider&) = delete;
  ExecCredentialProvider& operator=(const ExecCredentialProvider&) = delete;

  // Validates the config (api version, command, interactive mode).
  static Status Validate(const ExecConfig& config);

  // The cached token, or a fresh one from the plugin when there is none, it has expired, or it
  // was invalidated. The token is considered expired a little (10 s) before its timestamp.
  Result<std::string> Token();
  // Drops the cached token if it is still `token` (a 401 proved it bad); a later Token() runs
  // the plugin. Concurrent 401s for the same token cause one plugin run, not many.
  void Invalidate(const std::string& token);

  // How many times the plugin has been run (for tests and metrics).
  int runs() const;

 private:
  const ExecConfig config_;
  const Clock& clock_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::optional<ExecCredential> cached_;
  int runs_ = 0;
};

}  // namespace sluice::kube
