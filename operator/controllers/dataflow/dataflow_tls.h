// TLS for the dataflow (issue 23): the objects the operator provisions so that the dataflow
// serves HTTPS and its clients verify it, and the decisions on when to make or renew them.
//
//   Secret     sluice-ca      the namespace's certificate authority (tls.crt, tls.key): made by
//                             the first Dataflow of the namespace, shared by all, owned by none
//                             (deleting a Dataflow keeps it); replaced a year before it expires
//   Secret     <df>-tls       kubernetes.io/tls: the dataflow's serving certificate from that CA
//                             (tls.crt, tls.key) and the CA (ca.crt), for the Service's names
//                             (DataflowServingHosts); owned by the Dataflow, reissued 30 days
//                             before it expires, when the CA changed or the names did
//   ConfigMap  <df>-ca        ca.crt only: what the trainer and rollout pods mount to verify the
//                             dataflow (the CA's key and the serving key stay out of their pods)
//
// The dataflow pod mounts <df>-tls and serves with --tls-cert-file/--tls-key-file (re-read when
// the Secret is updated); the trainer and rollout pods reach https://<svc>.<ns>.svc:8080 with
// --tls-ca-file; the operator's own GET /v1/status goes to the pod IP and verifies the Service
// name (ClientTlsOptions::server_name), since a certificate made before the pod cannot name its IP.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/tls/certificates.h"

namespace sluice::controllers {

inline constexpr char kNamespaceCaSecretName[] = "sluice-ca";
// Lifetimes: the CA for 10 years, renewed in its last; serving certificates for a year, renewed
// in their last 30 days.
inline constexpr std::chrono::hours kCaValidity{24 * 3650};
inline constexpr std::chrono::hours kCaRenewBefore{24 * 365};
inline constexpr std::chrono::hours kServingValidity{24 * 365};
inline constexpr std::chrono::hours kServingRenewBefore{24 * 30};

// What to do with the namespace CA Secret the cache holds (null: none).
struct CaPlan {
  enum Kind {
    kKeep,      // `ca` is good.
    kCreate,    // There is none.
    kReplace,   // It must be replaced: `reason` says why (expiring, not yet valid).
    kUnusable,  // It cannot be used at all (`reason`); a human must look, nothing is overwritten.
  };
  Kind kind = kCreate;
  std::string reason;
  tls::CertifiedKey ca;  // With kKeep: the CA, PEM.
};
CaPlan PlanNamespaceCa(const nlohmann::json* secret, Clock::WallTime now);

// The CA (tls.crt, tls.key) in a Secret's base64 `data`; InvalidArgument naming the missing key.
Result<tls::CertifiedKey> CaFromSecret(const nlohmann::json& secret);

// "<svc>", "<svc>.<ns>", "<svc>.<ns>.svc", "<svc>.<ns>.svc.cluster.local" for the Dataflow's
// Service (DataflowServiceName).
std::vector<std::string> DataflowServingHosts(const nlohmann::json& dataflow);
// "<svc>.<ns>.svc": the name the operator verifies when it calls the pod by its IP.
std::string DataflowServerName(const nlohmann::json& dataflow);

// Why the Dataflow's serving Secret (null: none) must be (re)issued from `ca_cert_pem`, or
// nullopt to keep it.
std::optional<std::string> DataflowServingProblem(const nlohmann::json* secret,
                                                  const std::string& ca_cert_pem,
                                                  const nlohmann::json& dataflow,
                                                  Clock::WallTime now);

std::string DataflowTlsSecretName(const std::string& dataflow);
std::string DataflowCaConfigMapName(const std::string& dataflow);

// The objects (Secrets with base64 `data`, so an update replaces the keys exactly).
nlohmann::json DesiredNamespaceCaSecret(const std::string& ns, const tls::CertifiedKey& ca);
nlohmann::json DesiredDataflowTlsSecret(const nlohmann::json& dataflow,
                                        const tls::CertifiedKey& serving,
                                        const std::string& ca_cert_pem);
nlohmann::json DesiredDataflowCaConfigMap(const nlohmann::json& dataflow,
                                          const std::string& ca_cert_pem);

// The dataflow pod's volume, mount and flags for its serving certificate.
nlohmann::json DataflowTlsVolume(const std::string& dataflow);
nlohmann::json DataflowTlsMount();
std::vector<std::string> DataflowServingTlsArgs();
// The trainer and rollout pods' volume, mount and flag for the CA that verifies the dataflow.
nlohmann::json DataflowCaVolume(const std::string& dataflow);
nlohmann::json DataflowCaMount();
std::string DataflowCaFileArg();

}  // namespace sluice::controllers
