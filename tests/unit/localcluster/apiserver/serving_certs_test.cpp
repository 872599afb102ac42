// Tests of EnsureServingCerts: what it issues (checked with OpenSSL), when it reuses and when it
// re-issues, its errors, and the certificates in use: sluice::http::Server serving them to
// sluice::http::Client and to the real kubectl.
#include "localcluster/apiserver/serving_certs.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "localcluster/apiserver/kubeconfig_writer.h"
#include "tests/unit/localcluster/apiserver/local_tls_server.h"

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using testutil::ReadAll;
using testutil::ScratchDir;

constexpr hours kDay{24};
const char* const kFiles[] = {"ca.crt", "ca.key", "apiserver.crt", "apiserver.key"};

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr LoadCert(const std::string& path) {
  const std::string pem = ReadAll(path);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

std::string CommonName(X509* cert) {
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
  return buf;
}

// Whole days between notBefore and notAfter.
int ValidityDays(X509* cert) {
  int days = 0;
  int seconds = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert), X509_get0_notAfter(cert)),
            1);
  return days;
}

// The X509_V_OK-or-error of verifying `cert` against `ca` as a TLS server certificate.
int Verify(X509* ca, X509* cert) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, cert, nullptr);
  X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
  const int ok = X509_verify_cert(ctx);
  const int err = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return err;
}

bool HasDns(X509* cert, const std::string& name) {
  return X509_check_host(cert, name.data(), name.size(), X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
                         nullptr) == 1;
}
bool HasIp(X509* cert, const std::string& ip) {
  return X509_check_ip_asc(cert, ip.c_str(), 0) == 1;
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const char* f : kFiles) out[f] = ReadAll((dir / f).string());
  return out;
}

const Clock::WallTime kNow = std::chrono::system_clock::now();

TEST(ServingCerts, FirstStartMakesACaAndAServerCertificateForEveryHost) {
  ScratchDir tmp;
  const std::string dir = tmp.File("state/pki");  // Created, with its parent.
  Result<ServingCerts> certs = EnsureServingCerts(
      dir, {"sluice.test", "10.1.2.3", "[fd00::1]", "Node-1.Example.COM."}, kNow);
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  EXPECT_TRUE(certs->ca_generated);
  EXPECT_TRUE(certs->server_cert_issued);
  EXPECT_FALSE(certs->reason.empty());
  EXPECT_EQ(certs->ca_cert_file, dir + "/ca.crt");
  EXPECT_EQ(certs->cert_file, dir + "/apiserver.crt");
  EXPECT_EQ(certs->key_file, dir + "/apiserver.key");
  EXPECT_EQ(certs->ca_pem, ReadAll(certs->ca_cert_file));
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(dir + "/ca.key"), 0600u);
  EXPECT_EQ(Mode(dir + "/apiserver.key"), 0600u);
  EXPECT_EQ(Mode(dir + "/ca.crt"), 0644u);
  EXPECT_EQ(Mode(dir + "/apiserver.crt"), 0644u);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 4u) << "no temporary files are left behind";

  X509Ptr ca = LoadCert(certs->ca_cert_file);
  X509Ptr server = LoadCert(certs->cert_file);
  ASSERT_TRUE(ca && server);
  EXPECT_EQ(CommonName(ca.get()), "sluice-local-ca");
  EXPECT_EQ(X509_check_ca(ca.get()), 1);  // basicConstraints CA:TRUE.
  EXPECT_TRUE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN);
  EXPECT_GE(ValidityDays(ca.get()), 3650);
  EXPECT_EQ(X509_check_ca(server.get()), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(server.get()) & XKU_SSL_SERVER);
  EXPECT_EQ(ValidityDays(server.get()), 365);
  EXPECT_EQ(X509_cmp_time(X509_get0_notBefore(server.get()), nullptr), -1) << "valid now";

  EXPECT_EQ(Verify(ca.get(), server.get()), X509_V_OK);
  for (const char* dns : {"sluice.test", "localhost", "node-1.example.com"}) {
    EXPECT_TRUE(HasDns(server.get(), dns)) << dns;
  }
  for (const char* ip : {"127.0.0.1", "10.1.2.3", "fd00::1"}) EXPECT_TRUE(HasIp(server.get(), ip));
  EXPECT_FALSE(HasDns(server.get(), "sluice-apiserver")) << "the CN is not a name";
  EXPECT_FALSE(HasDns(server.get(), "10.1.2.3")) << "IPs are IP SANs, not DNS SANs";

  EVP_PKEY* key = X509_get0_pubkey(server.get());
  EXPECT_EQ(EVP_PKEY_get_base_id(key), EVP_PKEY_EC);
  EXPECT_EQ(EVP_PKEY_get_bits(key), 256);

  // Serial numbers are random and positive.
  const ASN1_INTEGER* a = X509_get0_serialNumber(ca.get());
  const ASN1_INTEGER* b = X509_get0_serialNumber(server.get());
  EXPECT_NE(ASN1_INTEGER_cmp(a, b), 0);
  BIGNUM* bn = ASN1_INTEGER_to_BN(a, nullptr);
  EXPECT_FALSE(BN_is_negative(bn));
  EXPECT_GE(BN_num_bits(bn), 120);
  BN_free(bn);
}

TEST(ServingCerts, SecondStartReusesTheFilesByteForByte) {
  ScratchDir tmp;
  const std::string dir = tmp.File("pki");
  ASSERT_TRUE(EnsureServingCerts(dir, {"sluice.test", "10.1.2.3"}, kNow).ok());
  const auto before = Snapshot(dir);
  // Same hosts in another order and case, duplicated, plus the defaults spelled out; a day later.
  Result<ServingCerts> again = EnsureServingCerts(
      dir, {"10.1.2.3", "SLUICE.test", "localhost", "127.0.0.1", "", "sluice.test"}, kNow + kDay);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->ca_generated);
  EXPECT_FALSE(again->server_cert_issued);
  EXPECT_EQ(again->reason, "");
  EXPECT_EQ(again->ca_pem, before.at("ca.crt"));
  EXPECT_EQ(Snapshot(dir), before);
  // A subset of the hosts is covered too.
  ASSERT_TRUE(EnsureServingCerts(dir, {}, kNow).ok());
  EXPECT_EQ(Snapshot(dir), before);
}

TEST(ServingCerts, ANewHostReissuesTheServerCertificateFromTheSameCa) {
  ScratchDir tmp;
  const std::string dir = tmp.File("pki");
  ASSERT_TRUE(EnsureServingCerts(dir, {"sluice.test"}, kNow).ok());
  const auto before = Snapshot(dir);
  Result<ServingCerts> again = EnsureServingCerts(dir, {"sluice.test", "192.168.7.9"}, kNow);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->ca_generated);
  EXPECT_TRUE(again->server_cert_issued);
  EXPECT_NE(again->reason.find("192.168.7.9"), std::string::npos) << again->reason;
  const auto after = Snapshot(dir);
  EXPECT_EQ(after.at("ca.crt"), before.at("ca.crt"));
  EXPECT_EQ(after.at("ca.key"), before.at("ca.key"));
  EXPECT_NE(after.at("apiserver.crt"), before.at("apiserver.crt"));
  EXPECT_NE(after.at("apiserver.key"), before.at("apiserver.key"));
  X509Ptr ca = LoadCert(dir + "/ca.crt");
  X509Ptr server = LoadCert(dir + "/apiserver.crt");
  EXPECT_EQ(Verify(ca.get(), server.get()), X509_V_OK);
  EXPECT_TRUE(HasIp(server.get(), "192.168.7.9"));
  EXPECT_TRUE(HasDns(server.get(), "sluice.test"));

  // A new DNS name too.
  ASSERT_TRUE(EnsureServingCerts(dir, {"other.test"}, kNow)->server_cert_issued);
  EXPECT_EQ(ReadAll(dir + "/ca.crt"), before.at("ca.crt"));
}

TEST(ServingCerts, RenewsTheServerCertificateWithinThirtyDaysOfExpiry) {
  ScratchDir tmp;
  const std::string dir = tmp.File("pki");
  ASSERT_TRUE(EnsureServingCerts(dir, {}, kNow).ok());
  const auto before = Snapshot(dir);
  EXPECT_FALSE(EnsureServingCerts(dir, {}, kNow + 330 * kDay)->server_cert_issued);
  Result<ServingCerts> late = EnsureServingCerts(dir, {}, kNow + 340 * kDay);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_TRUE(late->server_cert_issued);
  EXPECT_FALSE(late->ca_generated);
  EXPECT_NE(late->reason.find("expires"), std::string::npos) << late->reason;
  EXPECT_EQ(ReadAll(dir + "/ca.crt"), before.at("ca.crt"));
  // The new certificate's validity starts at the `now` it was issued for.
  X509Ptr server = LoadCert(dir + "/apiserver.crt");
  time_t t = std::chrono::system_clock::to_time_t(kNow + 339 * kDay);
  EXPECT_EQ(X509_cmp_time(X509_get0_notBefore(server.get()), &t), 1);

  // An expiring CA is replaced, and the server certificate with it.
  Result<ServingCerts> ten_years = EnsureServingCerts(dir, {}, kNow + 3640 * kDay);
  ASSERT_TRUE(ten_years.ok()) << ten_years.status().ToString();
  EXPECT_TRUE(ten_years->ca_generated);
  EXPECT_TRUE(ten_years->server_cert_issued);
  EXPECT_NE(ReadAll(dir + "/ca.crt"), before.at("ca.crt"));
}

TEST(ServingCerts, RepairsDamagedOrForeignServerFiles) {
  ScratchDir tmp;
  const std::string dir = tmp.File("pki");
  ASSERT_TRUE(EnsureServingCerts(dir, {}, kNow).ok());
  const std::string ca = ReadAll(dir + "/ca.crt");

  fs::remove(dir + "/apiserver.crt");
  Result<ServingCerts> r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->server_cert_issued);
  EXPECT_NE(r->reason.find("does not exist"), std::string::npos) << r->reason;

  fs::copy_file(dir + "/ca.key", dir + "/apiserver.key", fs::copy_options::overwrite_existing);
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->server_cert_issued);
  EXPECT_NE(r->reason.find("does not match"), std::string::npos) << r->reason;

  { std::ofstream(dir + "/apiserver.crt") << "garbage"; }
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->server_cert_issued);
  EXPECT_NE(r->reason.find("not a PEM certificate"), std::string::npos) << r->reason;

  // A server certificate from another CA (say, a restored backup) does not verify.
  ScratchDir other;
  ASSERT_TRUE(EnsureServingCerts(other.File("pki"), {}, kNow).ok());
  fs::copy_file(other.File("pki/apiserver.crt"), dir + "/apiserver.crt",
                fs::copy_options::overwrite_existing);
  fs::copy_file(other.File("pki/apiserver.key"), dir + "/apiserver.key",
                fs::copy_options::overwrite_existing);
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->server_cert_issued);
  EXPECT_NE(r->reason.find("does not verify"), std::string::npos) << r->reason;
  X509Ptr ca_cert = LoadCert(dir + "/ca.crt");
  X509Ptr server = LoadCert(dir + "/apiserver.crt");
  EXPECT_EQ(Verify(ca_cert.get(), server.get()), X509_V_OK);
  EXPECT_EQ(ReadAll(dir + "/ca.crt"), ca);
}

TEST(ServingCerts, AnUnusableCaIsAnErrorNamingTheFile) {
  ScratchDir tmp;
  const std::string dir = tmp.File("pki");
  ASSERT_TRUE(EnsureServingCerts(dir, {}, kNow).ok());
  const std::string ca = ReadAll(dir + "/ca.crt");
  const std::string ca_key = ReadAll(dir + "/ca.key");

  { std::ofstream(dir + "/ca.crt") << "not a certificate"; }
  Result<ServingCerts> r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(dir + "/ca.crt"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no start line"), std::string::npos)
      << "OpenSSL's reason: " << r.status().ToString();
  EXPECT_EQ(ReadAll(dir + "/ca.crt"), "not a certificate") << "never silently replaced";

  { std::ofstream(dir + "/ca.crt") << ca; }
  fs::remove(dir + "/ca.key");
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir + "/ca.key"), std::string::npos) << r.status().ToString();

  // A key of another CA.
  fs::copy_file(dir + "/apiserver.key", dir + "/ca.key");
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not match"), std::string::npos)
      << r.status().ToString();

  // The server certificate is not a CA.
  { std::ofstream(dir + "/ca.crt") << ReadAll(dir + "/apiserver.crt"); }
  r = EnsureServingCerts(dir, {}, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not a CA certificate"), std::string::npos)
      << r.status().ToString();
}

TEST(ServingCerts, RejectsHostsThatAreNeitherNamesNorAddresses) {
  ScratchDir tmp;
  for (const char* bad : {"bad host", "a..b", "-x.test", "x_y.test", "a,DNS:evil.test"}) {
    Result<ServingCerts> r = EnsureServingCerts(tmp.File("pki"), {bad}, kNow);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().ToString();
  }
  EXPECT_FALSE(fs::exists(tmp.File("pki"))) << "nothing is written for bad input";
  EXPECT_TRUE(EnsureServingCerts(tmp.File("pki"), {"*.apps.test"}, kNow).ok());
  EXPECT_FALSE(EnsureServingCerts(tmp.File("pki"), {"*.apps.test"}, kNow)->server_cert_issued)
      << "a wildcard name is covered by itself";
}

// ---- The certificates in use --------------------------------------------------------------

class ServingCertsTls : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<testutil::LocalTlsServer>(tmp_.path().string());
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<http::Client> MakeClient(http::ClientOptions options) {
    options.base_url = server_->url();
    options.max_attempts = 1;
    Result<std::unique_ptr<http::Client>> c = http::Client::Create(std::move(options));
    SLUICE_CHECK(c.ok());
    return std::move(c).value();
  }

  ScratchDir tmp_;
  std::unique_ptr<testutil::LocalTlsServer> server_;
};

TEST_F(ServingCertsTls, AClientTrustingTheCaConnectsAndOneWithoutItDoesNot) {
  http::ClientOptions options;
  options.tls.ca_file = server_->certs().ca_cert_file;
  options.token = http::TokenSource::FromValue(server_->token());
  Result<http::Response> r = MakeClient(options)->Get("/version");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find(testutil::kGitVersion), std::string::npos);

  // The CA as kubeconfig carries it, and the DNS SAN "localhost" as the verified name.
  http::ClientOptions pem;
  pem.tls.ca_pem = server_->certs().ca_pem;
  pem.tls.server_name = "localhost";
  pem.token = options.token;
  r = MakeClient(pem)->Get("/version");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);

  http::ClientOptions wrong_name = pem;
  wrong_name.tls.server_name = "elsewhere.test";
  EXPECT_FALSE(MakeClient(wrong_name)->Get("/version").ok());

  http::ClientOptions no_ca;  // The system's CAs do not know ours.
  no_ca.token = options.token;
  r = MakeClient(no_ca)->Get("/version");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("certificate verification failed"), std::string::npos)
      << r.status().ToString();

  http::ClientOptions no_token;
  no_token.tls.ca_file = server_->certs().ca_cert_file;
  r = MakeClient(no_token)->Get("/version");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(server_->version_requests(), 2);
}

// The real kubectl, with a kubeconfig from WriteKubeconfig: proves the CA, the certificate's
// SANs, the kubeconfig schema and the token are all what client-go expects.
class ServingCertsKubectl : public ServingCertsTls {
 protected:
  static constexpr char kKubectl[] = "/usr/bin/kubectl";

  void SetUp() override {
    ASSERT_TRUE(fs::exists(kKubectl)) << kKubectl << " is not installed";
    ServingCertsTls::SetUp();
  }

  testutil::CommandResult Kubectl(const KubeconfigParams& params, const std::string& args) {
    const std::string path = tmp_.File("kubeconfig-" + std::to_string(++written_));
    Status s = WriteKubeconfig(path, params);
    EXPECT_TRUE(s.ok()) << s.ToString();
    // A private HOME keeps kubectl's cache out of the real one; KUBECONFIG is ignored when
    // --kubeconfig is given, but is cleared anyway.
    return testutil::RunCommand("env HOME=" + tmp_.path().string() + " KUBECONFIG= " + kKubectl +
                                " --kubeconfig " + path + " --request-timeout=20s " + args);
  }

  KubeconfigParams Params() const {
    KubeconfigParams p;
    p.server = server_->url();
    p.ca_pem = server_->certs().ca_pem;
    p.token = server_->token();
    return p;
  }

  int written_ = 0;
};

TEST_F(ServingCertsKubectl, KubectlTrustsTheCaAndSendsTheToken) {
  testutil::CommandResult r = Kubectl(Params(), "get --raw /version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(testutil::kGitVersion), std::string::npos) << r.output;
  // At least one: the kubectl of the Google Cloud SDK is a dispatcher that may first ask the
  // server's /version itself to pick a matching kubectl.
  EXPECT_GE(server_->version_requests(), 1);

  KubeconfigParams by_name = Params();  // The DNS SAN.
  by_name.server = "https://localhost:" + server_->url().substr(server_->url().rfind(':') + 1);
  r = Kubectl(by_name, "get --raw /version");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  KubeconfigParams wrong_token = Params();
  wrong_token.token = "not-the-token";
  r = Kubectl(wrong_token, "get --raw /version");
  EXPECT_NE(r.exit_code, 0) << r.output;
  // kubectl's text for a 401.
  EXPECT_NE(r.output.find("must be logged in"), std::string::npos) << r.output;

  KubeconfigParams no_ca = Params();
  no_ca.ca_pem.clear();
  r = Kubectl(no_ca, "get --raw /version");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("certificate"), std::string::npos) << r.output;
}

// kubectl (client-go's clientcmd) merges a kubeconfig user's credentials into its config only
// when the transport is TLS, so over plain HTTP it sends no token at all: a plain-HTTP server
// that requires the token cannot be used with kubectl. This pins that behaviour down.
TEST_F(ServingCertsKubectl, KubectlSendsNoTokenOverPlainHttp) {
  testutil::LocalTlsServer plain(tmp_.File("plain"), /*tls=*/false);
  Status s = plain.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  KubeconfigParams p;
  p.server = plain.url();
  p.insecure = true;
  p.token = plain.token();
  testutil::CommandResult r = Kubectl(p, "get --raw /version");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("must be logged in"), std::string::npos) << r.output;
  EXPECT_EQ(plain.version_requests(), 0);
}

}  // namespace
}  // namespace sluice::apiserver
