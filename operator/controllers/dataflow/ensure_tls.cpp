// DataflowController::EnsureTls: the I/O around dataflow_tls.h's decisions.
#include "common/tls/certificates.h"
#include "operator/controllers/core_resources.h"
#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/dataflow/reconciler.h"
#include "operator/controllers/object_meta.h"

namespace sluice::controllers {

using nlohmann::json;

Status DataflowController::EnsureTls(const json& df) {
  const std::string ns = Namespace(df);
  const std::string name = Name(df);
  const Clock::WallTime now = clock_.WallNow();
  kube::ResourceClient secrets = client_.Resource(kSecrets, ns);

  // The namespace's CA.
  kube::ObjectPtr cached_ca = informers_.secrets->store().Get(ns + "/" + kNamespaceCaSecretName);
  CaPlan plan = PlanNamespaceCa(cached_ca.get(), now);
  tls::CertifiedKey ca = plan.ca;
  if (plan.kind == CaPlan::kUnusable) {
    return Status::InvalidArgument(plan.reason +
                                       " (delete it to have a new CA made; every Dataflow's "
                                       "certificate in the namespace is then reissued)",
                                   "Secret " + std::string(kNamespaceCaSecretName));
  }
  if (plan.kind == CaPlan::kCreate || plan.kind == CaPlan::kReplace) {
    const tls::CertificateSpec spec{std::string(kNamespaceCaSecretName) + "." + ns, now,
                                    kCaValidity};
    SLUICE_ASSIGN_OR_RETURN(ca, tls::NewCertificateAuthority(spec));
    json desired = DesiredNamespaceCaSecret(ns, ca);
    Result<json> written = json();
    if (plan.kind == CaPlan::kCreate) {
      written = secrets.Create(desired);
    } else {
      json updated = *cached_ca;
      updated["data"] = desired["data"];
      written = secrets.Update(updated);
      (void)events_.Record(df, kube::kEventNormal, "CertificateAuthorityReplaced",
                           "Secret " + std::string(kNamespaceCaSecretName) + ": " + plan.reason);
    }
    if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) {
      // Another Dataflow of the namespace made it first (the cache had not seen it): use theirs.
      SLUICE_ASSIGN_OR_RETURN(json theirs, secrets.Get(kNamespaceCaSecretName));
      SLUICE_ASSIGN_OR_RETURN(ca, CaFromSecret(theirs));
    } else if (!written.ok()) {
      return written.status();
    }
  }

  // The dataflow's serving certificate, from that CA.
  const std::string secret_name = DataflowTlsSecretName(name);
  kube::ObjectPtr cached = informers_.secrets->store().Get(ns + "/" + secret_name);
  if (std::optional<std::string> problem =
          DataflowServingProblem(cached.get(), ca.cert_pem, df, now)) {
    const tls::CertificateSpec spec{DataflowServerName(df), now, kServingValidity};
    SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey serving,
                            tls::IssueServingCertificate(ca, spec, DataflowServingHosts(df)));
    const json desired = DesiredDataflowTlsSecret(df, serving, ca.cert_pem);
    Result<json> written = json();
    if (!cached) {
      written = secrets.Create(desired);
      // Made by an earlier pass the cache has not caught up with: the next pass looks again.
      if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) written = json();
    } else {
      json updated = *cached;
      updated["data"] = desired["data"];
      written = secrets.Update(updated);
      (void)events_.Record(df, kube::kEventNormal, "CertificateReissued",
                           "Secret " + secret_name + ": " + *problem);
    }
    if (!written.ok()) return written.status();
  }

  // The CA alone, for the pods that verify the dataflow.
  const json cm = DesiredDataflowCaConfigMap(df, ca.cert_pem);
  kube::ObjectPtr current =
      informers_.config_maps->store().Get(ns + "/" + DataflowCaConfigMapName(name));
  Result<json> written = json();
  if (!current) {
    written = client_.Resource(kConfigMaps, ns).Create(cm);
    if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) written = json();
  } else if (current->value("data", json()) != cm["data"]) {
    json updated = *current;
    updated["data"] = cm["data"];
    written = client_.Resource(kConfigMaps, ns).Update(updated);
  }
  return written.ok() ? Status::Ok() : written.status();
}

}  // namespace sluice::controllers
