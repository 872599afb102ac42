// common/tls/certificates.h: a CA and the serving certificates it signs, checked three ways: by
// the module's own problem reports, by the openssl command line (`openssl verify`, `x509`), and
// by an HTTPS round trip between Sluice's own server and client.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/tls/certificates.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace sluice::tls {
namespace {

using std::chrono::hours;
using test_support::RunShell;
using test_support::ShellQuote;

// A fixed instant, so that expiry is checked without waiting: 2026-01-01T00:00:00Z.
const Clock::WallTime kNow = Clock::WallTime(std::chrono::seconds(1767225600));
constexpr hours kDay = hours(24);
constexpr hours kRenewBefore = hours(24 * 30);

CertifiedKey Ca(const std::string& name = "sluice-test-ca") {
  Result<CertifiedKey> ca = NewCertificateAuthority({name, kNow, 365 * kDay});
  EXPECT_TRUE(ca.ok()) << ca.status().ToString();
  return ca.ok() ? *ca : CertifiedKey{};
}

CertifiedKey Serving(const CertifiedKey& ca, const std::vector<std::string>& hosts,
                     hours validity = 90 * kDay) {
  Result<CertifiedKey> s = IssueServingCertificate(ca, {"digits", kNow, validity}, hosts);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : CertifiedKey{};
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(TlsCertificatesTest, ACaIsGoodUntilItNearsItsEnd) {
  const CertifiedKey ca = Ca();
  ASSERT_NE(ca.cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  ASSERT_NE(ca.key_pem.find("PRIVATE KEY"), std::string::npos);
  Result<std::optional<std::string>> fresh = CertificateAuthorityProblem(ca, kNow, kRenewBefore);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_FALSE(fresh->has_value()) << **fresh;
  // Valid from 5 minutes before its `now` (clock skew), not earlier.
  EXPECT_FALSE(
      CertificateAuthorityProblem(ca, kNow - std::chrono::minutes(4), kRenewBefore)->has_value());
  Result<std::optional<std::string>> early =
      CertificateAuthorityProblem(ca, kNow - std::chrono::minutes(6), kRenewBefore);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->has_value());
  // 30 days before its end it asks to be replaced.
  Result<std::optional<std::string>> late =
      CertificateAuthorityProblem(ca, kNow + 340 * kDay, kRenewBefore);
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE(late->has_value());
  EXPECT_NE((*late)->find("expires within 30 days"), std::string::npos) << **late;
  Result<int64_t> not_after = CertificateNotAfter(ca.cert_pem);
  ASSERT_TRUE(not_after.ok()) << not_after.status().ToString();
  EXPECT_EQ(*not_after,
            std::chrono::duration_cast<std::chrono::seconds>((kNow + 365 * kDay).time_since_epoch())
                .count());
}

TEST(TlsCertificatesTest, AnUnusableCaIsAnErrorNotAReason) {
  const CertifiedKey ca = Ca();
  const CertifiedKey other = Ca("other");
  Result<std::optional<std::string>> r =
      CertificateAuthorityProblem({"not a certificate", ca.key_pem}, kNow, kRenewBefore);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a PEM certificate"), std::string::npos);
  r = CertificateAuthorityProblem({ca.cert_pem, other.key_pem}, kNow, kRenewBefore);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not match"), std::string::npos);
  // A serving certificate cannot sign.
  const CertifiedKey serving = Serving(ca, {"digits.rl.svc"});
  r = CertificateAuthorityProblem(serving, kNow, kRenewBefore);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a CA certificate"), std::string::npos);
  Result<CertifiedKey> issued = IssueServingCertificate(serving, {"x", kNow, kDay}, {"a.b"});
  ASSERT_FALSE(issued.ok());
  EXPECT_NE(issued.status().message().find("not a CA certificate"), std::string::npos);
}

TEST(TlsCertificatesTest, AServingCertificateCoversItsHostsCanonically) {
  const CertifiedKey ca = Ca();
  const CertifiedKey s = Serving(ca, {"digits", "Digits.RL.svc.", "digits.rl.svc.cluster.local",
                                      "10.0.0.7", "[::1]", "", "digits"});
  // DNS names sorted, then addresses by their bytes.
  Result<std::vector<std::string>> hosts = CertificateHosts(s.cert_pem);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"digits", "digits.rl.svc",
                                              "digits.rl.svc.cluster.local", "::1", "10.0.0.7"}));
  EXPECT_EQ(ServingCertificateProblem(ca.cert_pem, s, {"digits.rl.svc", "::1"}, kNow, kRenewBefore),
            std::nullopt);
  EXPECT_EQ(ServingCertificateProblem(ca.cert_pem, s, *hosts, kNow, kRenewBefore), std::nullopt);

  // Each reason to reissue, named.
  const auto problem = [&](const std::string& ca_pem, const CertifiedKey& cert,
                           const std::vector<std::string>& want, Clock::WallTime at) {
    return ServingCertificateProblem(ca_pem, cert, want, at, kRenewBefore).value_or("");
  };
  EXPECT_NE(problem(ca.cert_pem, s, {"digits.other.svc"}, kNow).find("\"digits.other.svc\""),
            std::string::npos);
  EXPECT_NE(problem(ca.cert_pem, s, {"10.0.0.8"}, kNow).find("does not cover host \"10.0.0.8\""),
            std::string::npos);
  EXPECT_NE(problem(ca.cert_pem, s, {"digits"}, kNow + 61 * kDay).find("expires within 30 days"),
            std::string::npos);
  EXPECT_NE(problem(Ca("other").cert_pem, s, {"digits"}, kNow).find("does not verify"),
            std::string::npos);
  EXPECT_NE(problem(ca.cert_pem, {s.cert_pem, ca.key_pem}, {"digits"}, kNow).find("does not match"),
            std::string::npos);
  EXPECT_NE(
      problem(ca.cert_pem, {"garbage", s.key_pem}, {"digits"}, kNow).find("not a PEM certificate"),
      std::string::npos);
  EXPECT_NE(problem(ca.cert_pem, s, {"bad host!"}, kNow).find("bad host!"), std::string::npos);
}

TEST(TlsCertificatesTest, BadHostsAreRefusedNamingThem) {
  const CertifiedKey ca = Ca();
  for (const std::string bad : {"has space", "-leading.dash", "under_score.svc", "a..b"}) {
    Result<CertifiedKey> r = IssueServingCertificate(ca, {"x", kNow, kDay}, {"ok.svc", bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("\"" + bad + "\""), std::string::npos)
        << r.status().ToString();
    EXPECT_FALSE(ValidateHosts({bad}).ok()) << bad;
  }
  EXPECT_TRUE(ValidateHosts({"*.digits.rl.svc", "10.1.2.3", "[fe80::1]", ""}).ok());
  Result<CertifiedKey> none = IssueServingCertificate(ca, {"x", kNow, kDay}, {"", ""});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().field(), "hosts");
}

TEST(TlsCertificatesTest, OpensslAgreesWithTheChain) {
  test_support::TempDir dir;
  const CertifiedKey ca = Ca();
  const CertifiedKey s = Serving(ca, {"digits.rl.svc", "127.0.0.1"});
  Write(dir.File("ca.crt"), ca.cert_pem);
  Write(dir.File("server.crt"), s.cert_pem);
  Write(dir.File("other.crt"), Ca("other").cert_pem);
  // -attime: the certificates are valid from kNow, which may be in the machine's future or past.
  const std::string at =
      " -attime " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                       (kNow + kDay).time_since_epoch())
                                       .count());
  test_support::ShellResult ok =
      RunShell("openssl verify -purpose sslserver" + at + " -CAfile " +
               ShellQuote(dir.File("ca.crt")) + " " + ShellQuote(dir.File("server.crt")));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  test_support::ShellResult wrong =
      RunShell("openssl verify" + at + " -CAfile " + ShellQuote(dir.File("other.crt")) + " " +
               ShellQuote(dir.File("server.crt")));
  EXPECT_NE(wrong.exit_code, 0) << wrong.output;
  test_support::ShellResult text =
      RunShell("openssl x509 -noout -text -in " + ShellQuote(dir.File("server.crt")));
  EXPECT_NE(text.output.find("DNS:digits.rl.svc, IP Address:127.0.0.1"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("TLS Web Server Authentication"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("CA:FALSE"), std::string::npos) << text.output;
}

// Sluice's own HTTPS server on loopback, serving GET /v1/hello with `serving`, and its client.
class HelloServer {
 public:
  explicit HelloServer(const CertifiedKey& serving) {
    Write(dir_.File("server.crt"), serving.cert_pem);
    Write(dir_.File("server.key"), serving.key_pem);
    http::ServerOptions options;
    options.tls = http::ServerTlsOptions{dir_.File("server.crt"), dir_.File("server.key"), ""};
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);
    server_->Get("/v1/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hi", "text/plain");
    });
  }
  Status Start() { return server_->Start(); }
  std::string BaseUrl() const { return server_->BaseUrl(); }
  // GET /v1/hello trusting `ca_pem`, verifying `server_name` (empty: the URL's host).
  Result<http::Response> Get(const std::string& ca_pem, const std::string& server_name = "") {
    http::ClientOptions client_options;
    client_options.base_url = server_->BaseUrl();
    client_options.tls.ca_pem = ca_pem;
    client_options.tls.server_name = server_name;
    client_options.max_attempts = 1;
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(client_options);
    if (!client.ok()) return client.status();
    return (*client)->Get("/v1/hello");
  }

 private:
  test_support::TempDir dir_;
  log::Logger logger_{"test", SystemClock::Instance(), [](std::string_view) {}};
  std::unique_ptr<http::Server> server_;
};

TEST(TlsCertificatesTest, SluicesServerAndClientSpeakHttpsWithThem) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<CertifiedKey> ca = NewCertificateAuthority({"sluice-test-ca", now, kDay});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  Result<CertifiedKey> s = IssueServingCertificate(*ca, {"digits", now, kDay}, {"127.0.0.1"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  HelloServer server(*s);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_EQ(server.BaseUrl().rfind("https://", 0), 0u) << server.BaseUrl();

  Result<http::Response> trusted = server.Get(ca->cert_pem);
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  EXPECT_EQ(trusted->status, 200);
  EXPECT_EQ(trusted->body, "hi");
  // A client trusting another CA refuses the server.
  Result<http::Response> untrusted = server.Get(Ca("other").cert_pem);
  EXPECT_FALSE(untrusted.ok() && untrusted->status == 200);
}

// The trainer ranks' certificate names them all with one wildcard (operator/controllers/
// trainerjob/desired_pods.h): covered as Sluice's client verifies it, one first label only.
TEST(TlsCertificatesTest, AWildcardCoversOneFirstLabelAsTheClientVerifiesIt) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  // Long enough for ServingCertificateProblem to find nothing to renew.
  Result<CertifiedKey> ca = NewCertificateAuthority({"sluice-test-ca", now, 730 * kDay});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  Result<CertifiedKey> s =
      IssueServingCertificate(*ca, {"train-0.train.rl.svc", now, 365 * kDay}, {"*.train.rl.svc"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const char* host : {"*.train.rl.svc", "train-0.train.rl.svc", "Train-17.train.rl.svc"}) {
    EXPECT_EQ(ServingCertificateProblem(ca->cert_pem, *s, {host}, now, kRenewBefore), std::nullopt)
        << host;
  }
  for (const char* host : {"a.train-0.train.rl.svc", "train.rl.svc", "train-0.other.rl.svc"}) {
    EXPECT_NE(ServingCertificateProblem(ca->cert_pem, *s, {host}, now, kRenewBefore), std::nullopt)
        << host;
  }

  HelloServer server(*s);
  ASSERT_TRUE(server.Start().ok());
  Result<http::Response> rank = server.Get(ca->cert_pem, "train-3.train.rl.svc");
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  EXPECT_EQ(rank->status, 200);
  for (const char* name : {"train-3.other.rl.svc", "a.train-3.train.rl.svc"}) {
    Result<http::Response> refused = server.Get(ca->cert_pem, name);
    EXPECT_FALSE(refused.ok() && refused->status == 200) << name;
  }
}

}  // namespace
}  // namespace sluice::tls
