#include "operator/controllers/dataflow/dataflow_tls.h"

#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/object_meta.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

// Where the pods mount the CA (the node agent remaps the path on the local cluster).
constexpr char kCaDir[] = "/var/run/sluice/dataflow-ca";

json OwnedMeta(const json& df, const std::string& name) {
  return {{"name", name},
          {"namespace", Namespace(df)},
          {"labels",
           StandardLabels("sluice-dataflow", Name(df), "dataflow", {{kDataflowLabel, Name(df)}})},
          {"ownerReferences", json::array({ControllerRef(df)})}};
}

}  // namespace

std::string DataflowServerName(const json& df) {
  return DataflowServiceName(Name(df)) + "." + Namespace(df) + ".svc";
}

std::vector<std::string> DataflowServingHosts(const json& df) {
  const std::string svc = DataflowServiceName(Name(df));
  const std::string server = DataflowServerName(df);
  return {svc, svc + "." + Namespace(df), server, server + ".cluster.local"};
}

std::optional<std::string> DataflowServingProblem(const json* secret,
                                                  const std::string& ca_cert_pem, const json& df,
                                                  Clock::WallTime now) {
  return ServingSecretProblem(secret, ca_cert_pem, DataflowServingHosts(df), now);
}

std::string DataflowTlsSecretName(const std::string& df) { return SubdomainName(df, "-tls"); }
std::string DataflowCaConfigMapName(const std::string& df) { return SubdomainName(df, "-ca"); }

json DataflowTlsSecretMeta(const json& df) {
  return OwnedMeta(df, DataflowTlsSecretName(Name(df)));
}

json DesiredDataflowTlsSecret(const json& df, const tls::CertifiedKey& serving,
                              const std::string& ca_cert_pem) {
  return DesiredServingSecret(DataflowTlsSecretMeta(df), serving, ca_cert_pem);
}

json DesiredDataflowCaConfigMap(const json& df, const std::string& ca_cert_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", OwnedMeta(df, DataflowCaConfigMapName(Name(df)))},
          {"data", {{"ca.crt", ca_cert_pem}}}};
}

json DataflowTlsVolume(const std::string& df) {
  return ServingTlsVolume(DataflowTlsSecretName(df));
}

json DataflowCaVolume(const std::string& df) {
  return {{"name", "dataflow-ca"}, {"configMap", {{"name", DataflowCaConfigMapName(df)}}}};
}

json DataflowCaMount() {
  return {{"name", "dataflow-ca"}, {"mountPath", kCaDir}, {"readOnly", true}};
}

std::string DataflowCaFileArg() { return std::string("--tls-ca-file=") + kCaDir + "/ca.crt"; }

}  // namespace sluice::controllers
