// operator/controllers/dataflow/dataflow_tls.h: when the namespace CA and a Dataflow's serving
// certificate are made, kept or renewed, and the objects that carry them.
#include "operator/controllers/dataflow/dataflow_tls.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/base64.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;
using std::chrono::hours;

// 2026-01-01T00:00:00Z.
const Clock::WallTime kTlsNow = Clock::WallTime(std::chrono::seconds(1767225600));

json TlsDataflow(const std::string& name = "arith") {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "Dataflow"},
          {"metadata", {{"name", name}, {"namespace", "rl"}, {"uid", "df-uid"}}}};
}

tls::CertifiedKey MakeCa(Clock::WallTime at, hours validity = kCaValidity) {
  Result<tls::CertifiedKey> ca = tls::NewCertificateAuthority({"sluice-ca.rl", at, validity});
  EXPECT_TRUE(ca.ok()) << ca.status().ToString();
  return ca.ok() ? *ca : tls::CertifiedKey{};
}

json ServingSecret(const json& df, const tls::CertifiedKey& ca, Clock::WallTime at,
                   hours validity = kServingValidity) {
  Result<tls::CertifiedKey> s = tls::IssueServingCertificate(
      ca, {DataflowServerName(df), at, validity}, DataflowServingHosts(df));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return DesiredDataflowTlsSecret(df, s.ok() ? *s : tls::CertifiedKey{}, ca.cert_pem);
}

TEST(DataflowTlsTest, TheNamespaceCaIsMadeOnceKeptAndReplacedBeforeItExpires) {
  EXPECT_EQ(PlanNamespaceCa(nullptr, kTlsNow).kind, CaPlan::kCreate);

  const tls::CertifiedKey ca = MakeCa(kTlsNow);
  const json secret = DesiredNamespaceCaSecret("rl", ca);
  const CaPlan keep = PlanNamespaceCa(&secret, kTlsNow + hours(24 * 100));
  EXPECT_EQ(keep.kind, CaPlan::kKeep) << keep.reason;
  EXPECT_EQ(keep.ca.cert_pem, ca.cert_pem);
  EXPECT_EQ(keep.ca.key_pem, ca.key_pem);

  // In its last year it is replaced.
  const CaPlan old = PlanNamespaceCa(&secret, kTlsNow + kCaValidity - hours(24 * 100));
  EXPECT_EQ(old.kind, CaPlan::kReplace);
  EXPECT_FALSE(old.reason.empty());

  // A Secret that cannot be a CA is left for a human, never overwritten.
  json no_key = secret;
  no_key["data"].erase("tls.key");
  const CaPlan missing = PlanNamespaceCa(&no_key, kTlsNow);
  EXPECT_EQ(missing.kind, CaPlan::kUnusable);
  EXPECT_NE(missing.reason.find("tls.key"), std::string::npos) << missing.reason;
  json garbage = secret;
  garbage["data"]["tls.crt"] = Base64Encode("not a certificate");
  EXPECT_EQ(PlanNamespaceCa(&garbage, kTlsNow).kind, CaPlan::kUnusable);
}

TEST(DataflowTlsTest, TheServingCertificateIsReissuedWhenItWouldNoLongerVerify) {
  const json df = TlsDataflow();
  const tls::CertifiedKey ca = MakeCa(kTlsNow);
  EXPECT_EQ(DataflowServingProblem(nullptr, ca.cert_pem, df, kTlsNow), "there is none");

  const json secret = ServingSecret(df, ca, kTlsNow);
  EXPECT_EQ(DataflowServingProblem(&secret, ca.cert_pem, df, kTlsNow + hours(24)), std::nullopt);
  // Its last 30 days.
  EXPECT_NE(DataflowServingProblem(&secret, ca.cert_pem, df, kTlsNow + hours(24 * 340)),
            std::nullopt);
  // A new CA (the old one was replaced).
  const tls::CertifiedKey other = MakeCa(kTlsNow);
  EXPECT_NE(DataflowServingProblem(&secret, other.cert_pem, df, kTlsNow), std::nullopt);
  // A certificate for another Dataflow's names.
  const json elsewhere = ServingSecret(TlsDataflow("other"), ca, kTlsNow);
  EXPECT_NE(DataflowServingProblem(&elsewhere, ca.cert_pem, df, kTlsNow), std::nullopt);
}

TEST(DataflowTlsTest, ObjectsCarryOnlyWhatEachReaderNeeds) {
  const json df = TlsDataflow();
  EXPECT_EQ(DataflowServingHosts(df), (std::vector<std::string>{"arith", "arith.rl", "arith.rl.svc",
                                                                "arith.rl.svc.cluster.local"}));
  EXPECT_EQ(DataflowServerName(df), "arith.rl.svc");

  const tls::CertifiedKey ca = MakeCa(kTlsNow);
  const json ca_secret = DesiredNamespaceCaSecret("rl", ca);
  EXPECT_EQ(ca_secret["metadata"]["name"], kNamespaceCaSecretName);
  EXPECT_EQ(ca_secret["metadata"]["namespace"], "rl");
  EXPECT_FALSE(ca_secret["metadata"].contains("ownerReferences"));  // Shared by the namespace.
  EXPECT_EQ(ca_secret["metadata"]["labels"]["app.kubernetes.io/managed-by"], "sluice-operator");
  Result<tls::CertifiedKey> back = CaFromSecret(ca_secret);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cert_pem, ca.cert_pem);

  const json serving = ServingSecret(df, ca, kTlsNow);
  EXPECT_EQ(serving["metadata"]["name"], "arith-tls");
  EXPECT_EQ(serving["type"], "kubernetes.io/tls");
  EXPECT_EQ(serving["metadata"]["ownerReferences"][0]["kind"], "Dataflow");
  for (const char* key : {"tls.crt", "tls.key", "ca.crt"}) {
    EXPECT_TRUE(serving["data"].contains(key)) << key;
  }
  EXPECT_EQ(Base64Decode(serving["data"]["ca.crt"].get<std::string>()).value(), ca.cert_pem);

  const json cm = DesiredDataflowCaConfigMap(df, ca.cert_pem);
  EXPECT_EQ(cm["metadata"]["name"], "arith-ca");
  EXPECT_EQ(cm["data"], json({{"ca.crt", ca.cert_pem}}));  // No key of any kind.

  EXPECT_EQ(DataflowCaVolume("arith"),
            json::parse(R"({"name": "dataflow-ca", "configMap": {"name": "arith-ca"}})"));
  EXPECT_EQ(DataflowCaFileArg(), "--tls-ca-file=/var/run/sluice/dataflow-ca/ca.crt");
  EXPECT_EQ(DataflowTlsVolume("arith"),
            json::parse(R"({"name": "tls", "secret": {"secretName": "arith-tls"}})"));
}

}  // namespace
}  // namespace sluice::controllers
