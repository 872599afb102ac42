#include "operator/controllers/ensure_certificates.h"

#include "operator/controllers/core_resources.h"
#include "operator/controllers/namespace_certificates.h"

namespace sluice::controllers {

using nlohmann::json;

Result<tls::CertifiedKey> EnsureNamespaceCa(kube::DynamicClient& client, kube::Informer& secrets,
                                            kube::EventRecorder& events, const json& about,
                                            const std::string& ns, Clock::WallTime now) {
  kube::ResourceClient api = client.Resource(kSecrets, ns);
  kube::ObjectPtr cached = secrets.store().Get(ns + "/" + kNamespaceCaSecretName);
  const CaPlan plan = PlanNamespaceCa(cached.get(), now);
  if (plan.kind == CaPlan::kKeep) return plan.ca;
  if (plan.kind == CaPlan::kUnusable) {
    return Status::InvalidArgument(plan.reason +
                                       " (delete it to have a new CA made; every certificate in "
                                       "the namespace is then reissued)",
                                   "Secret " + std::string(kNamespaceCaSecretName));
  }
  const tls::CertificateSpec spec{std::string(kNamespaceCaSecretName) + "." + ns, now, kCaValidity};
  SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey ca, tls::NewCertificateAuthority(spec));
  const json desired = DesiredNamespaceCaSecret(ns, ca);
  Result<json> written = json();
  if (plan.kind == CaPlan::kCreate) {
    written = api.Create(desired);
  } else {
    json updated = *cached;
    updated["data"] = desired["data"];
    written = api.Update(updated);
    if (written.ok()) {
      (void)events.Record(about, kube::kEventNormal, "CertificateAuthorityReplaced",
                          "Secret " + std::string(kNamespaceCaSecretName) + ": " + plan.reason);
    }
  }
  if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) {
    // Another controller made it first (the cache had not seen it): use theirs.
    SLUICE_ASSIGN_OR_RETURN(json theirs, api.Get(kNamespaceCaSecretName));
    return CaFromSecret(theirs);
  }
  if (!written.ok()) return written.status();
  return ca;
}

Status EnsureServingSecret(kube::DynamicClient& client, kube::Informer& secrets,
                           kube::EventRecorder& events, const json& about, const json& metadata,
                           const std::vector<std::string>& hosts, const std::string& common_name,
                           const tls::CertifiedKey& ca, Clock::WallTime now) {
  const std::string ns = metadata.value("namespace", "default");
  const std::string name = metadata.value("name", "");
  kube::ObjectPtr cached = secrets.store().Get(ns + "/" + name);
  const std::optional<std::string> problem =
      ServingSecretProblem(cached.get(), ca.cert_pem, hosts, now);
  if (!problem) return Status::Ok();
  const tls::CertificateSpec spec{common_name, now, kServingValidity};
  SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey serving, tls::IssueServingCertificate(ca, spec, hosts));
  const json desired = DesiredServingSecret(metadata, serving, ca.cert_pem);
  kube::ResourceClient api = client.Resource(kSecrets, ns);
  if (!cached) {
    Result<json> written = api.Create(desired);
    // Made by an earlier pass the cache has not caught up with: the next pass looks again.
    if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) {
      return Status::Ok();
    }
    return written.status();
  }
  json updated = *cached;
  updated["data"] = desired["data"];
  SLUICE_RETURN_IF_ERROR(api.Update(updated).status());
  (void)events.Record(about, kube::kEventNormal, "CertificateReissued",
                      "Secret " + name + ": " + *problem);
  return Status::Ok();
}

}  // namespace sluice::controllers
