// DataflowController::EnsureTls: the I/O around dataflow_tls.h's decisions.
#include "operator/controllers/core_resources.h"
#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/dataflow/reconciler.h"
#include "operator/controllers/ensure_certificates.h"
#include "operator/controllers/object_meta.h"

namespace sluice::controllers {

using nlohmann::json;

Status DataflowController::EnsureTls(const json& df) {
  const std::string ns = Namespace(df);
  const Clock::WallTime now = clock_.WallNow();

  // The namespace's CA and the dataflow's serving certificate from it.
  SLUICE_ASSIGN_OR_RETURN(tls::CertifiedKey ca,
                          EnsureNamespaceCa(client_, *informers_.secrets, events_, df, ns, now));
  SLUICE_RETURN_IF_ERROR(EnsureServingSecret(client_, *informers_.secrets, events_, df,
                                             DataflowTlsSecretMeta(df), DataflowServingHosts(df),
                                             DataflowServerName(df), ca, now));

  // The CA alone, for the pods that verify the dataflow.
  const json cm = DesiredDataflowCaConfigMap(df, ca.cert_pem);
  kube::ObjectPtr current =
      informers_.config_maps->store().Get(ns + "/" + DataflowCaConfigMapName(Name(df)));
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
