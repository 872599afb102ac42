// The certificates the operator provisions in a namespace (issue 23, docs/security.md "TLS"): the
// namespace's certificate authority and the serving certificates it signs for the components that
// serve HTTPS (the dataflow, dataflow/dataflow_tls.h; trainer ranks, trainerjob/trainer_tls.h).
//
//   Secret  sluice-ca   the namespace's CA (tls.crt, tls.key): made by the first controller that
//                       needs it, shared by all, owned by none (deleting a Dataflow or a job keeps
//                       it); replaced a year before it expires
//   Secret  <serving>   kubernetes.io/tls (tls.crt, tls.key, ca.crt) for a component's names,
//                       owned by its object; reissued 30 days before it expires, when the CA
//                       changed or the names did
//
// A serving pod mounts its Secret (ServingTlsVolume/Mount) and serves with ServingTlsArgs (the
// files are re-read when the Secret is updated); its clients verify it with the CA alone.
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
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

// Why a serving Secret (null: none) must be (re)issued from `ca_cert_pem` for `hosts`, or
// nullopt to keep it.
std::optional<std::string> ServingSecretProblem(const nlohmann::json* secret,
                                                const std::string& ca_cert_pem,
                                                const std::vector<std::string>& hosts,
                                                Clock::WallTime now);

// The objects (Secrets with base64 `data`, so an update replaces the keys exactly).
nlohmann::json DesiredNamespaceCaSecret(const std::string& ns, const tls::CertifiedKey& ca);
// `metadata`: the Secret's name, namespace, labels and owner.
nlohmann::json DesiredServingSecret(const nlohmann::json& metadata,
                                    const tls::CertifiedKey& serving,
                                    const std::string& ca_cert_pem);

// A serving pod's volume (named "tls"), mount and flags for its serving Secret.
nlohmann::json ServingTlsVolume(const std::string& secret_name);
nlohmann::json ServingTlsMount();
std::vector<std::string> ServingTlsArgs();

}  // namespace sluice::controllers
