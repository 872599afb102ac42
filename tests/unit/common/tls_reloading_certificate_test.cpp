// common/tls/reloading_certificate.h: a server picks up a renewed certificate on its next
// handshake, keeps the last good pair through a half-written renewal, and refuses to start
// without a usable one; and a client picks up a replaced CA file on its next connection.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/tls/certificates.h"
#include "common/tls/reloading_certificate.h"
#include "tests/support/temp_dir.h"

namespace sluice::tls {
namespace {

constexpr std::chrono::hours kCertificateLifetime(24);

struct Issued {
  CertifiedKey ca;
  CertifiedKey serving;
};

// A new CA and a certificate from it for 127.0.0.1.
Issued Issue(const std::string& ca_name) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<CertifiedKey> ca = NewCertificateAuthority({ca_name, now, kCertificateLifetime});
  EXPECT_TRUE(ca.ok()) << ca.status().ToString();
  if (!ca.ok()) return {};
  Result<CertifiedKey> s =
      IssueServingCertificate(*ca, {"dataflow", now, kCertificateLifetime}, {"127.0.0.1"});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return {*ca, s.ok() ? *s : CertifiedKey{}};
}

// Writes `text` beside `path` and renames it over `path`, as kubelets and atomic writers do.
void Replace(const std::string& path, const std::string& text) {
  const std::string staged = path + ".new";
  std::ofstream(staged) << text;
  std::filesystem::rename(staged, path);
}

class ReloadingCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    first_ = Issue("first-ca");
    second_ = Issue("second-ca");
    Replace(Cert(), first_.serving.cert_pem);
    Replace(Key(), first_.serving.key_pem);
  }
  std::string Cert() const { return dir_.File("tls.crt"); }
  std::string Key() const { return dir_.File("tls.key"); }

  // A GET over a new connection, trusting only `ca_pem`: 200 when the server's certificate now
  // chains to it.
  Result<http::Response> GetTrusting(const http::Server& server, const std::string& ca_pem) {
    http::ClientOptions options;
    options.base_url = server.BaseUrl();
    options.tls.ca_pem = ca_pem;
    options.max_attempts = 1;
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
    if (!client.ok()) return client.status();
    return (*client)->Get("/v1/hello");
  }

  // A server of GET /v1/hello with the pair in Cert() and Key(), not started.
  std::unique_ptr<http::Server> HelloServer() {
    http::ServerOptions options;
    options.tls = http::ServerTlsOptions{Cert(), Key(), ""};
    auto server = std::make_unique<http::Server>(options, nullptr, logger_);
    server->Get("/v1/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hi", "text/plain");
    });
    return server;
  }

  test_support::TempDir dir_;
  Issued first_;
  Issued second_;
  log::Logger logger_{"test", SystemClock::Instance(), [](std::string_view) {}};
};

TEST_F(ReloadingCertificateTest, NewConnectionsGetTheRenewedCertificate) {
  std::unique_ptr<http::Server> served = HelloServer();
  http::Server& server = *served;
  ASSERT_TRUE(server.Start().ok());

  Result<http::Response> before = GetTrusting(server, first_.ca.cert_pem);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->status, 200);
  EXPECT_FALSE(GetTrusting(server, second_.ca.cert_pem).ok());

  // The renewal: a certificate from another CA, key and certificate both replaced.
  Replace(Key(), second_.serving.key_pem);
  Replace(Cert(), second_.serving.cert_pem);
  Result<http::Response> after = GetTrusting(server, second_.ca.cert_pem);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body, "hi");
  EXPECT_FALSE(GetTrusting(server, first_.ca.cert_pem).ok());
  server.Shutdown();
}

// The other side of a CA replacement: a long-lived client with a CA file (a worker's
// --tls-ca-file, the mounted ConfigMap <df>-ca) reads the file again for each new connection, so
// it trusts the replacement without a restart once the file is replaced. (Pooled connections it
// already verified are kept; by default none is reused after a second idle: ClientOptions.)
TEST_F(ReloadingCertificateTest, AClientReadsItsCaFileAgainForEachNewConnection) {
  std::unique_ptr<http::Server> served = HelloServer();
  http::Server& server = *served;
  ASSERT_TRUE(server.Start().ok());
  const std::string ca_file = dir_.File("ca.crt");
  Replace(ca_file, first_.ca.cert_pem);
  http::ClientOptions client_options;
  client_options.base_url = server.BaseUrl();
  client_options.tls.ca_file = ca_file;
  client_options.max_attempts = 1;
  client_options.max_idle_connections = 0;  // Every request on a new connection.
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(client_options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  Result<http::Response> before = (*client)->Get("/v1/hello");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->status, 200);
  // The server's certificate is reissued by the replacement CA: the client, still trusting the
  // first, refuses it...
  Replace(Key(), second_.serving.key_pem);
  Replace(Cert(), second_.serving.cert_pem);
  EXPECT_FALSE((*client)->Get("/v1/hello").ok());
  // ...until its CA file holds the replacement.
  Replace(ca_file, second_.ca.cert_pem);
  Result<http::Response> after = (*client)->Get("/v1/hello");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->body, "hi");
  server.Shutdown();
}

TEST_F(ReloadingCertificateTest, AHalfWrittenRenewalKeepsTheLastGoodPair) {
  Result<std::unique_ptr<ReloadingCertificate>> cert = ReloadingCertificate::Load(Cert(), Key());
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  EXPECT_EQ((*cert)->CurrentLeafPem(), first_.serving.cert_pem);
  EXPECT_EQ((*cert)->reloads(), 0u);

  // Only the certificate has been replaced: it does not match the key, so the old pair stays.
  Replace(Cert(), second_.serving.cert_pem);
  EXPECT_EQ((*cert)->CurrentLeafPem(), first_.serving.cert_pem);
  EXPECT_EQ((*cert)->reloads(), 0u);
  // The key follows; the next look takes both.
  Replace(Key(), second_.serving.key_pem);
  EXPECT_EQ((*cert)->CurrentLeafPem(), second_.serving.cert_pem);
  EXPECT_EQ((*cert)->reloads(), 1u);
  // A file that disappears for a moment changes nothing either.
  std::filesystem::remove(Key());
  EXPECT_EQ((*cert)->CurrentLeafPem(), second_.serving.cert_pem);
  Replace(Key(), second_.serving.key_pem);
  EXPECT_EQ((*cert)->CurrentLeafPem(), second_.serving.cert_pem);
}

TEST_F(ReloadingCertificateTest, UnusableFilesAreErrorsNamingTheFile) {
  Result<std::unique_ptr<ReloadingCertificate>> missing =
      ReloadingCertificate::Load(dir_.File("absent.crt"), Key());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.crt"), std::string::npos)
      << missing.status().ToString();

  Replace(dir_.File("not.crt"), "not a certificate");
  Result<std::unique_ptr<ReloadingCertificate>> garbage =
      ReloadingCertificate::Load(dir_.File("not.crt"), Key());
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("no PEM certificate"), std::string::npos)
      << garbage.status().ToString();

  Replace(Key(), second_.serving.key_pem);  // Not the key of the certificate in Cert().
  Result<std::unique_ptr<ReloadingCertificate>> mismatched =
      ReloadingCertificate::Load(Cert(), Key());
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("does not match"), std::string::npos)
      << mismatched.status().ToString();

  // The server reports it from Start.
  http::ServerOptions options;
  options.tls = http::ServerTlsOptions{Cert(), Key(), ""};
  http::Server server(options, nullptr, logger_);
  Status started = server.Start();
  EXPECT_EQ(started.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(started.message().find("does not match"), std::string::npos) << started.ToString();
}

}  // namespace
}  // namespace sluice::tls
