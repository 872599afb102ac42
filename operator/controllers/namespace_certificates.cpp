#include "operator/controllers/namespace_certificates.h"

#include "common/base64.h"
#include "operator/controllers/labels.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

// Where serving pods mount their Secret (the node agent remaps it on the local cluster).
constexpr char kTlsDir[] = "/var/run/sluice/tls";

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

std::optional<std::string> ServingSecretProblem(const json* secret, const std::string& ca_cert_pem,
                                                const std::vector<std::string>& hosts,
                                                Clock::WallTime now) {
  if (secret == nullptr) return "there is none";
  if (SecretText(*secret, "ca.crt") != ca_cert_pem) return "its ca.crt is not the namespace's CA";
  const tls::CertifiedKey serving{SecretText(*secret, "tls.crt"), SecretText(*secret, "tls.key")};
  return tls::ServingCertificateProblem(ca_cert_pem, serving, hosts, now, kServingRenewBefore);
}

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

json DesiredServingSecret(const json& metadata, const tls::CertifiedKey& serving,
                          const std::string& ca_cert_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", metadata},
          {"type", "kubernetes.io/tls"},
          {"data",
           {{"tls.crt", Base64Encode(serving.cert_pem)},
            {"tls.key", Base64Encode(serving.key_pem)},
            {"ca.crt", Base64Encode(ca_cert_pem)}}}};
}

json ServingTlsVolume(const std::string& secret_name) {
  return {{"name", "tls"}, {"secret", {{"secretName", secret_name}}}};
}

json ServingTlsMount() { return {{"name", "tls"}, {"mountPath", kTlsDir}, {"readOnly", true}}; }

std::vector<std::string> ServingTlsArgs() {
  return {std::string("--tls-cert-file=") + kTlsDir + "/tls.crt",
          std::string("--tls-key-file=") + kTlsDir + "/tls.key"};
}

}  // namespace sluice::controllers
