#include "operator/controllers/dataflow/dataflow_tls.h"

#include "common/base64.h"
#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/object_meta.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

// Where the pods mount them (the node agent remaps these paths on the local cluster).
constexpr char kTlsDir[] = "/var/run/sluice/tls";
constexpr char kCaDir[] = "/var/run/sluice/dataflow-ca";

json OwnedMeta(const json& df, const std::string& name) {
  return {{"name", name},
          {"namespace", Namespace(df)},
          {"labels",
           StandardLabels("sluice-dataflow", Name(df), "dataflow", {{kDataflowLabel, Name(df)}})},
          {"ownerReferences", json::array({ControllerRef(df)})}};
}

// A key of a Secret's base64 `data`, decoded; empty when absent or not base64.
std::string SecretText(const json& secret, const std::string& key) {
  const json data = secret.value("data", json::object());
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) return "";
  Result<std::string> text = Base64Decode(data[key].get<std::string>());
  return text.ok() ? *text : "";
}

}  // namespace

Result<tls::CertifiedKey> CaFromSecret(const json& secret) {
  tls::CertifiedKey ca{SecretText(secret, "tls.crt"), SecretText(secret, "tls.key")};
  if (ca.cert_pem.empty()) return Status::InvalidArgument("no data[tls.crt]", "data");
  if (ca.key_pem.empty()) return Status::InvalidArgument("no data[tls.key]", "data");
  return ca;
}

CaPlan PlanNamespaceCa(const json* secret, Clock::WallTime now) {
  if (secret == nullptr) return {CaPlan::kCreate, "", {}};
  Result<tls::CertifiedKey> ca = CaFromSecret(*secret);
  if (!ca.ok()) return {CaPlan::kUnusable, ca.status().message(), {}};
  Result<std::optional<std::string>> problem =
      tls::CertificateAuthorityProblem(*ca, now, kCaRenewBefore);
  if (!problem.ok()) return {CaPlan::kUnusable, problem.status().message(), {}};
  if (problem->has_value()) return {CaPlan::kReplace, **problem, {}};
  return {CaPlan::kKeep, "", *ca};
}

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
  if (secret == nullptr) return "there is none";
  if (SecretText(*secret, "ca.crt") != ca_cert_pem) return "its ca.crt is not the namespace's CA";
  const tls::CertifiedKey serving{SecretText(*secret, "tls.crt"), SecretText(*secret, "tls.key")};
  return tls::ServingCertificateProblem(ca_cert_pem, serving, DataflowServingHosts(df), now,
                                        kServingRenewBefore);
}

std::string DataflowTlsSecretName(const std::string& df) { return SubdomainName(df, "-tls"); }
std::string DataflowCaConfigMapName(const std::string& df) { return SubdomainName(df, "-ca"); }

json DesiredNamespaceCaSecret(const std::string& ns, const tls::CertifiedKey& ca) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       {{"name", kNamespaceCaSecretName},
        {"namespace", ns},
        {"labels", StandardLabels("sluice-operator", kNamespaceCaSecretName, "ca")}}},
      {"type", "Opaque"},
      {"data", {{"tls.crt", Base64Encode(ca.cert_pem)}, {"tls.key", Base64Encode(ca.key_pem)}}}};
}

json DesiredDataflowTlsSecret(const json& df, const tls::CertifiedKey& serving,
                              const std::string& ca_cert_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", OwnedMeta(df, DataflowTlsSecretName(Name(df)))},
          {"type", "kubernetes.io/tls"},
          {"data",
           {{"tls.crt", Base64Encode(serving.cert_pem)},
            {"tls.key", Base64Encode(serving.key_pem)},
            {"ca.crt", Base64Encode(ca_cert_pem)}}}};
}

json DesiredDataflowCaConfigMap(const json& df, const std::string& ca_cert_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", OwnedMeta(df, DataflowCaConfigMapName(Name(df)))},
          {"data", {{"ca.crt", ca_cert_pem}}}};
}

json DataflowTlsVolume(const std::string& df) {
  return {{"name", "tls"}, {"secret", {{"secretName", DataflowTlsSecretName(df)}}}};
}

json DataflowTlsMount() { return {{"name", "tls"}, {"mountPath", kTlsDir}, {"readOnly", true}}; }

std::vector<std::string> DataflowServingTlsArgs() {
  return {std::string("--tls-cert-file=") + kTlsDir + "/tls.crt",
          std::string("--tls-key-file=") + kTlsDir + "/tls.key"};
}

json DataflowCaVolume(const std::string& df) {
  return {{"name", "dataflow-ca"}, {"configMap", {{"name", DataflowCaConfigMapName(df)}}}};
}

json DataflowCaMount() {
  return {{"name", "dataflow-ca"}, {"mountPath", kCaDir}, {"readOnly", true}};
}

std::string DataflowCaFileArg() { return std::string("--tls-ca-file=") + kCaDir + "/ca.crt"; }

}  // namespace sluice::controllers
