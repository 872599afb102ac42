// The service-account token a pod's processes find at
// /var/run/secrets/kubernetes.io/serviceaccount, as a kubelet mounts kube's kube-api-access-<id>
// projected volume: files `token` (a token bound to the pod, from the API server's TokenRequest),
// `ca.crt` (the API server's CA) and `namespace`.
//
// Whether a pod gets it (AutomountServiceAccountToken): the pod's
// spec.automountServiceAccountToken when set, else its ServiceAccount's, else yes. The
// ServiceAccount is spec.serviceAccountName (the API server defaults it to "default").
//
// The token is requested as kubelet requests it (PodTokenRequest: the API server's audiences,
// expirationSeconds 3607, bound to the pod by name and uid) and refreshed as kubelet refreshes it
// (TokenRefreshTime: when 80% of its requested lifetime has passed, or 24 h after issue, whichever
// comes first; kubelet adds up to 10 s of random jitter, which this does not).
//
// Where the files are: <pod dir>/var/run/secrets/kubernetes.io/serviceaccount/, so that
// $SLUICE_ROOT followed by the path a program would open in a container is the real file, and
// every container gets a mount of that directory at kServiceAccountMountPath
// (AddServiceAccountMount), so the path-remapping of pod_volumes.h rewrites arguments and env
// values that name it, unless the container mounts something else there itself (kube's admission
// also leaves such containers alone). Files are written atomically (temporary file and rename);
// `token` has mode 0600 (kube: 0644 inside the container's own file system; here other users of
// the machine could read it), `ca.crt` and `namespace` 0644.
//
// Thread safety: pure functions, except WriteServiceAccountFiles (file system; one caller per
// pod at a time).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "localcluster/node/pod_volumes.h"

namespace sluice::node {

inline constexpr char kServiceAccountMountPath[] = "/var/run/secrets/kubernetes.io/serviceaccount";
// The volume's name in events and messages (kube's is kube-api-access-<5 random characters>).
inline constexpr char kServiceAccountVolume[] = "kube-api-access";
// kubelet's expirationSeconds (an hour and 7 seconds, so the server can tell its requests apart).
inline constexpr int64_t kPodTokenExpirationSeconds = 3607;

// The ServiceAccount a pod runs as: spec.serviceAccountName, else the deprecated
// spec.serviceAccount, else "default".
std::string PodServiceAccountName(const nlohmann::json& pod);

// Whether the pod gets the token (file comment). `service_account` is the ServiceAccount as the
// API server has it; nullopt when it was not found (the token request then fails, as in kube).
bool AutomountServiceAccountToken(const nlohmann::json& pod,
                                  const std::optional<nlohmann::json>& service_account);
// Whether the pod itself decides (spec.automountServiceAccountToken is a boolean), so the
// ServiceAccount need not be read.
bool PodDecidesAutomount(const nlohmann::json& pod);

// The authentication.k8s.io/v1 TokenRequest kubelet posts to
// serviceaccounts/<PodServiceAccountName>/token for the pod.
nlohmann::json PodTokenRequest(const nlohmann::json& pod);

struct ServiceAccountToken {
  std::string token;
  Clock::WallTime expires;       // status.expirationTimestamp.
  int64_t lifetime_seconds = 0;  // spec.expirationSeconds of the reply.
};

// The token of a TokenRequest reply; InvalidArgument when status.token is empty or the
// expiration is missing or malformed.
Result<ServiceAccountToken> TokenFromTokenRequest(const nlohmann::json& reply);

// When to ask for a new token: issue time (expires - lifetime) + 80% of the lifetime, or issue
// time + 24 h, whichever is earlier.
Clock::WallTime TokenRefreshTime(const ServiceAccountToken& token);

// <pod_dir>/var/run/secrets/kubernetes.io/serviceaccount.
std::filesystem::path ServiceAccountDir(const std::filesystem::path& pod_dir);

// Writes token, ca.crt and namespace into `dir` (created if missing), each atomically.
Status WriteServiceAccountFiles(const std::filesystem::path& dir, const std::string& token,
                                const std::string& ca_pem, const std::string& namespace_);

// Adds the mapping kServiceAccountMountPath -> `dir` to a container's mounts (ContainerMounts'
// result, longest path first) unless one of them is already at that path; keeps the order.
void AddServiceAccountMount(std::vector<PathMapping>& mounts, const std::filesystem::path& dir);

}  // namespace sluice::node
