// TLS for the dataflow (issue 23): the objects the operator provisions so that the dataflow
// serves HTTPS and its clients verify it, and the decisions on when to make or renew them, over
// the namespace's CA (namespace_certificates.h, Secret sluice-ca).
//
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
#include "operator/controllers/namespace_certificates.h"

namespace sluice::controllers {

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

// The objects (namespace_certificates.h makes the namespace's CA Secret). The serving Secret's
// metadata: name, namespace, labels, owned by the Dataflow.
nlohmann::json DataflowTlsSecretMeta(const nlohmann::json& dataflow);
nlohmann::json DesiredDataflowTlsSecret(const nlohmann::json& dataflow,
                                        const tls::CertifiedKey& serving,
                                        const std::string& ca_cert_pem);
nlohmann::json DesiredDataflowCaConfigMap(const nlohmann::json& dataflow,
                                          const std::string& ca_cert_pem);

// The dataflow pod's volume for its serving certificate (mounted with ServingTlsMount, served with
// ServingTlsArgs).
nlohmann::json DataflowTlsVolume(const std::string& dataflow);
// The trainer and rollout pods' volume, mount and flag for the CA that verifies the dataflow.
nlohmann::json DataflowCaVolume(const std::string& dataflow);
nlohmann::json DataflowCaMount();
std::string DataflowCaFileArg();

}  // namespace sluice::controllers
