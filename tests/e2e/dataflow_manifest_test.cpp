// Smoke test of `sluice-dataflow --dataflow-manifest`: the real binary configured from an
// example Dataflow serves /readyz and reports the manifest's policies and settings, explicit flags
// override the manifest, and an invalid manifest refuses to start (exit 2) listing every field
// error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/tls/certificates.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/dataflow_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

class DataflowManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-dataflow-manifest-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(DataflowManifestTest, ServesFromTheSinglePolicyExample) {
  DataflowProcess p(dir_.string());
  ASSERT_TRUE(p.Start({"--dataflow-manifest=" + SourceDir() + "/examples/single-policy-grpo.yaml",
                       "--capacity=100"}))
      << p.Log();
  const json status = p.Status();
  ASSERT_TRUE(status.is_object()) << p.Log();
  const std::string text = status.dump();
  EXPECT_NE(text.find("\"tiny\""), std::string::npos) << text;  // spec.workflow.roles' policy.
  EXPECT_NE(p.Log().find("\"dataflow\":\"arithmetic\""), std::string::npos) << p.Log();
  // Manifest: 20000 rows with 2% held out for eval, by problem: only the surplus rows of the last
  // held-out problem are dropped from training (operands up to 50 repeat a problem a few times).
  EXPECT_EQ(status["prompts"]["total"].get<int64_t>() +
                status["prompts"]["dropped_duplicates"].get<int64_t>(),
            19600)
      << text;
  EXPECT_LT(status["prompts"]["dropped_duplicates"].get<int64_t>(), 10) << text;
  // An explicit flag overrides the manifest (whose 65536 trajectories would be 8192 groups).
  EXPECT_EQ(status["capacity_groups"], 100) << text;
  // Tasks carry the manifest's group size, sampling and workflow.
  Result<http::Response> lease = p.client().Post(
      "/v1/leases", json{{"worker_id", "w"}, {"capacity", 1}}.dump(), "application/json");
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_EQ(lease->status, 200) << lease->body;
  const json tasks = json::parse(lease->body)["tasks"];
  ASSERT_EQ(tasks.size(), 1u) << lease->body;
  EXPECT_EQ(tasks[0]["samples"], 8);
  EXPECT_EQ(tasks[0]["sampling"]["maxNewTokens"], 8);
  EXPECT_EQ(tasks[0]["workflow"]["reward"]["type"], "exact-match");
  EXPECT_EQ(p.Kill(SIGTERM), 0) << p.Log();
}

// Per-role tokens on the real binary: the rollout replicas' token (--rollout-token-file) leases
// and reads versions, but cannot take or acknowledge a batch or announce a version (403 naming
// the role); the Dataflow's own token can; any other token gets 401.
TEST_F(DataflowManifestTest, TheRolloutTokenLeasesButCannotAckOrAnnounce) {
  DataflowProcess p(dir_.string(), "the-dataflow-token");
  std::ofstream(dir_ / "rollout-token") << "the-rollout-token\n";
  ASSERT_TRUE(p.Start({"--dataflow-manifest=" + SourceDir() + "/examples/single-policy-grpo.yaml",
                       "--rollout-token-file=" + (dir_ / "rollout-token").string()}))
      << p.Log();
  auto client_with = [&](const std::string& token) {
    http::ClientOptions co;
    co.base_url = p.base_url();
    co.max_attempts = 1;
    co.token = http::TokenSource::FromValue(token);
    return std::move(http::Client::Create(co)).value();
  };
  std::unique_ptr<http::Client> rollout = client_with("the-rollout-token");
  const std::string lease_body = json{{"worker_id", "w"}, {"capacity", 1}}.dump();
  Result<http::Response> lease = rollout->Post("/v1/leases", lease_body, "application/json");
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->status, 200) << lease->body;
  Result<http::Response> versions = rollout->Get("/v1/versions");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->status, 200) << versions->body;
  struct Refused {
    const char* method;
    std::string path;
  };
  for (const Refused& r : std::vector<Refused>{{"POST", "/v1/batches/b-1/ack"},
                                               {"GET", "/v1/batches/tiny"},
                                               {"POST", "/v1/policies/tiny/versions"},
                                               {"GET", "/v1/status"}}) {
    http::Request req;
    req.method = r.method;
    req.path = r.path;
    if (req.method == "POST") {
      req.body = "{}";
      req.content_type = "application/json";
    }
    Result<http::Response> res = rollout->Send(req);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    EXPECT_EQ(res->status, 403) << r.method << " " << r.path << ": " << res->body;
    EXPECT_NE(res->body.find("the rollout token may not " + std::string(r.method) + " " + r.path),
              std::string::npos)
        << res->body;
  }
  // The Dataflow's token reaches the same route (an unknown batch: 404, not 403).
  Result<http::Response> ack = p.client().Post("/v1/batches/b-1/ack", "{}", "application/json");
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->status, 404) << ack->body;
  Result<http::Response> stranger =
      client_with("some-other-token")->Post("/v1/leases", lease_body, "application/json");
  ASSERT_TRUE(stranger.ok());
  EXPECT_EQ(stranger->status, 401) << stranger->body;
  EXPECT_EQ(p.Kill(SIGTERM), 0) << p.Log();
}

// A rollout token without the Dataflow's own token would leave every route open: refused.
TEST_F(DataflowManifestTest, ARolloutTokenNeedsTheDataflowsToken) {
  DataflowProcess p(dir_.string());
  std::ofstream(dir_ / "rollout-token") << "the-rollout-token\n";
  EXPECT_FALSE(p.Start({"--rollout-token-file=" + (dir_ / "rollout-token").string()}));
  EXPECT_TRUE(WIFEXITED(p.exit_status()) && WEXITSTATUS(p.exit_status()) == 2) << p.Log();
  EXPECT_NE(p.Log().find("--rollout-token-file"), std::string::npos) << p.Log();
}

// A certificate without its key is a flag error naming the missing flag; a key that is not the
// certificate's stops the start naming the file (common/tls/reloading_certificate.h).
TEST_F(DataflowManifestTest, TlsFilesThatCannotServeRefuseToStart) {
  const Clock::WallTime now = SystemClock::Instance().WallNow();
  Result<tls::CertifiedKey> ca = tls::NewCertificateAuthority({"ca", now, std::chrono::hours(1)});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  Result<tls::CertifiedKey> serving =
      tls::IssueServingCertificate(*ca, {"dataflow", now, std::chrono::hours(1)}, {"127.0.0.1"});
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  const std::string cert = (dir_ / "tls.crt").string();
  std::ofstream(cert) << serving->cert_pem;
  std::ofstream(dir_ / "ca.key") << ca->key_pem;

  DataflowProcess alone(dir_.string());
  EXPECT_FALSE(alone.Start({"--tls-cert-file=" + cert}));
  EXPECT_TRUE(WIFEXITED(alone.exit_status()) && WEXITSTATUS(alone.exit_status()) == 2)
      << alone.Log();
  EXPECT_NE(alone.Log().find("--tls-key-file"), std::string::npos) << alone.Log();

  DataflowProcess mismatched(dir_.string());
  EXPECT_FALSE(mismatched.Start(
      {"--tls-cert-file=" + cert, "--tls-key-file=" + (dir_ / "ca.key").string()}));
  EXPECT_TRUE(WIFEXITED(mismatched.exit_status()) && WEXITSTATUS(mismatched.exit_status()) != 0)
      << mismatched.Log();
  EXPECT_NE(mismatched.Log().find("does not match"), std::string::npos) << mismatched.Log();
}

TEST_F(DataflowManifestTest, InvalidManifestRefusesToStartListingEveryError) {
  const std::string manifest = (dir_ / "bad.yaml").string();
  std::ofstream(manifest) << "apiVersion: sluice.dev/v1alpha1\nkind: Dataflow\n"
                             "metadata: {name: bad}\n"
                             "spec:\n  dataset: {builtin: {}}\n"
                             "  workflow: {roles: [{name: policy, policy: p}]}\n"
                             "  sampling: {groupSize: 0}\n  buffer: {order: lifo}\n";
  DataflowProcess p(dir_.string());
  EXPECT_FALSE(p.Start({"--dataflow-manifest=" + manifest}));
  ASSERT_TRUE(WIFEXITED(p.exit_status()));
  EXPECT_EQ(WEXITSTATUS(p.exit_status()), 2);
  const std::string log = p.Log();
  EXPECT_NE(log.find("spec.sampling.groupSize"), std::string::npos) << log;
  EXPECT_NE(log.find("spec.buffer.order"), std::string::npos) << log;
}

}  // namespace
}  // namespace sluice::e2e
