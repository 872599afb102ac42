// Kubeconfig: loading kubectl's configuration files and turning the chosen context into a
// RestConfig.
//
// Files: KubeconfigPaths() splits a KUBECONFIG value (colon-separated, empty entries and
// duplicates dropped) or falls back to ~/.kube/config. LoadKubeconfig() merges the files like
// kubectl: a cluster, user or context defined under the same name in several files is taken
// from the first file that defines it (later ones never override), and current-context is the
// first non-empty one. Files in the list that do not exist are skipped; it is an error when none
// exists. Relative file references (certificate-authority, client-certificate, client-key,
// tokenFile, exec command with a '/') are resolved against the directory of the file that holds
// them.
//
// Supported per cluster: server, certificate-authority(-data), insecure-skip-tls-verify,
// tls-server-name. Refused with an error naming the cluster: proxy-url (no proxy support).
// Per user: token, tokenFile, client-certificate(-data), client-key(-data), username/password,
// exec (exec_credential.h). Refused: auth-provider (removed from kubectl; use an exec plugin),
// and a bearer token together with username/password.
//
// Thread safety: pure functions and values, except that RestConfigFromKubeconfig reads no files
// (paths are passed on; the HTTP client reads them).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/exec_credential.h"
#include "kube/rest_config.h"

namespace sluice::kube {

struct KubeCluster {
  std::string server;
  std::string certificate_authority;       // Path, resolved.
  std::string certificate_authority_data;  // PEM (decoded from base64).
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;
  std::string source;  // The file it came from, for error messages.
};

struct KubeUser {
  std::string token;
  std::string token_file;
  std::string client_certificate;
  std::string client_certificate_data;  // PEM.
  std::string client_key;
  std::string client_key_data;  // PEM.
  std::string username;
  std::string password;
  std::optional<ExecConfig> exec;
  bool has_auth_provider = false;
  std::string source;
};

struct KubeContext {
  std::string cluster;
  std::string user;
  std::string namespace_;
};

struct Kubeconfig {
  std::map<std::string, KubeCluster> clusters;
  std::map<std::string, KubeUser> users;
  std::map<std::string, KubeContext> contexts;
  std::string current_context;
};

// The files to load: the KUBECONFIG value split on ':' when set and non-empty, else
// `home`/.kube/config.
std::vector<std::filesystem::path> KubeconfigPaths(const std::optional<std::string>& kubeconfig_env,
                                                   const std::filesystem::path& home);

// Parses one file's text. `source` names it in errors and anchors relative paths.
Result<Kubeconfig> ParseKubeconfig(const std::string& text, const std::filesystem::path& source);

// Merges `later` into `into` with kubectl's first-wins rules.
void MergeKubeconfig(Kubeconfig& into, const Kubeconfig& later);

// Reads, parses and merges `paths` in order.
Result<Kubeconfig> LoadKubeconfig(const std::vector<std::filesystem::path>& paths);

struct KubeconfigOverrides {
  std::string context;     // --context; empty: current-context.
  std::string namespace_;  // --namespace; empty: the context's.
};

// The RestConfig for the chosen context. `clock` is used by exec plugins for expiry and must
// outlive the config's users.
Result<RestConfig> RestConfigFromKubeconfig(const Kubeconfig& config,
                                            const KubeconfigOverrides& overrides,
                                            const Clock& clock);

// Standard base64 (with or without padding, whitespace ignored).
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace sluice::kube
