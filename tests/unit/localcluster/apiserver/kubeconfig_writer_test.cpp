// Tests of the kubeconfig writer: the YAML it renders, the file it writes, and a round trip
// through the operator's own kubeconfig reader and REST client (kube/) against a TLS
// server using the generated certificates and token.
#include "localcluster/apiserver/kubeconfig_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kube/kubeconfig.h"
#include "kube/rest_client.h"
#include "tests/unit/localcluster/apiserver/local_tls_server.h"

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;
using testutil::ReadAll;
using testutil::ScratchDir;

constexpr char kCaPem[] =
    "-----BEGIN CERTIFICATE-----\nMIIBfakefakefake\n-----END CERTIFICATE-----\n";

KubeconfigParams Params() {
  KubeconfigParams p;
  p.server = "https://127.0.0.1:6443";
  p.ca_pem = kCaPem;
  p.token = "0123abcd";
  return p;
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(KubeconfigWriter, RendersKubectlsSchema) {
  KubeconfigParams p = Params();
  p.namespace_ = "team-a";
  const std::string text = RenderKubeconfig(p);
  const YAML::Node root = YAML::Load(text);
  EXPECT_EQ(root["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(root["kind"].as<std::string>(), "Config");
  EXPECT_EQ(root["current-context"].as<std::string>(), "sluice-local");
  ASSERT_TRUE(root["clusters"].IsSequence());
  ASSERT_EQ(root["clusters"].size(), 1u);
  const YAML::Node cluster = root["clusters"][0];
  EXPECT_EQ(cluster["name"].as<std::string>(), "sluice-local");
  EXPECT_EQ(cluster["cluster"]["server"].as<std::string>(), "https://127.0.0.1:6443");
  Result<std::string> ca =
      kube::DecodeBase64(cluster["cluster"]["certificate-authority-data"].as<std::string>());
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(*ca, kCaPem);
  EXPECT_FALSE(cluster["cluster"]["insecure-skip-tls-verify"]);
  const YAML::Node context = root["contexts"][0];
  EXPECT_EQ(context["name"].as<std::string>(), "sluice-local");
  EXPECT_EQ(context["context"]["cluster"].as<std::string>(), "sluice-local");
  EXPECT_EQ(context["context"]["user"].as<std::string>(), "sluice-local");
  EXPECT_EQ(context["context"]["namespace"].as<std::string>(), "team-a");
  const YAML::Node user = root["users"][0];
  EXPECT_EQ(user["name"].as<std::string>(), "sluice-local");
  EXPECT_EQ(user["user"]["token"].as<std::string>(), "0123abcd");
  EXPECT_TRUE(root["preferences"].IsMap());

  // Nothing optional appears when unset.
  KubeconfigParams bare;
  bare.server = "http://127.0.0.1:8080";
  const YAML::Node plain = YAML::Load(RenderKubeconfig(bare));
  EXPECT_FALSE(plain["clusters"][0]["cluster"]["certificate-authority-data"]);
  EXPECT_FALSE(plain["contexts"][0]["context"]["namespace"]);
  EXPECT_TRUE(plain["users"][0]["user"].IsMap());
  EXPECT_EQ(plain["users"][0]["user"].size(), 0u);
}

TEST(KubeconfigWriter, RoundTripsThroughTheOperatorsReader) {
  KubeconfigParams p = Params();
  // Names and values YAML would misread unquoted.
  p.cluster_name = "local: #1";
  p.context_name = "- ctx";
  p.user_name = "'admin'";
  p.token = "tok: en # not a comment";
  p.namespace_ = "ns";
  Result<kube::Kubeconfig> parsed = kube::ParseKubeconfig(RenderKubeconfig(p), "/tmp/kc");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->current_context, "- ctx");
  ASSERT_TRUE(parsed->clusters.count("local: #1"));
  EXPECT_EQ(parsed->clusters.at("local: #1").certificate_authority_data, kCaPem);
  ASSERT_TRUE(parsed->users.count("'admin'"));
  EXPECT_EQ(parsed->users.at("'admin'").token, "tok: en # not a comment");

  FakeClock clock;
  Result<kube::RestConfig> rc = kube::RestConfigFromKubeconfig(*parsed, {}, clock);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(rc->host, "https://127.0.0.1:6443");
  EXPECT_EQ(rc->tls.ca_pem, kCaPem);
  EXPECT_FALSE(rc->tls.insecure_skip_verify);
  EXPECT_EQ(rc->bearer_token, "tok: en # not a comment");
  EXPECT_EQ(rc->default_namespace, "ns");

  KubeconfigParams insecure = Params();
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  parsed = kube::ParseKubeconfig(RenderKubeconfig(insecure), "/tmp/kc");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  rc = kube::RestConfigFromKubeconfig(*parsed, {}, clock);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_TRUE(rc->tls.insecure_skip_verify);
  EXPECT_EQ(rc->tls.ca_pem, "");
  EXPECT_EQ(rc->default_namespace, "default");
}

TEST(KubeconfigWriter, WritesAPrivateFileAtomically) {
  ScratchDir tmp;
  const std::string path = tmp.File("kubeconfig");
  { std::ofstream(path) << "old"; }
  fs::permissions(path, fs::perms::all);
  ASSERT_TRUE(WriteKubeconfig(path, Params()).ok());
  EXPECT_EQ(ReadAll(path), RenderKubeconfig(Params()));
  EXPECT_EQ(Mode(path), 0600u);

  KubeconfigParams both = Params();
  both.insecure_skip_tls_verify = true;
  Status s = WriteKubeconfig(path, both);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("insecure-skip-tls-verify"), std::string::npos) << s.ToString();
  KubeconfigParams no_scheme = Params();
  no_scheme.server = "127.0.0.1:6443";
  EXPECT_EQ(WriteKubeconfig(path, no_scheme).code(), StatusCode::kInvalidArgument);
  KubeconfigParams http_by_accident = Params();
  http_by_accident.ca_pem.clear();
  http_by_accident.server = "http://127.0.0.1:8080";
  s = WriteKubeconfig(path, http_by_accident);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("set insecure"), std::string::npos) << s.ToString();
  KubeconfigParams insecure_https = Params();
  insecure_https.ca_pem.clear();
  insecure_https.insecure = true;
  EXPECT_EQ(WriteKubeconfig(path, insecure_https).code(), StatusCode::kInvalidArgument);
  KubeconfigParams insecure_with_ca = Params();
  insecure_with_ca.server = "http://127.0.0.1:8080";
  insecure_with_ca.insecure = true;
  EXPECT_EQ(WriteKubeconfig(path, insecure_with_ca).code(), StatusCode::kInvalidArgument);
  KubeconfigParams no_name = Params();
  no_name.user_name.clear();
  EXPECT_EQ(WriteKubeconfig(path, no_name).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(path), RenderKubeconfig(Params())) << "a refused write changes nothing";

  // Plain HTTP, deliberately.
  KubeconfigParams plain;
  plain.server = "http://127.0.0.1:8080";
  plain.insecure = true;
  plain.token = "t";
  const std::string plain_path = tmp.File("plain");
  ASSERT_TRUE(WriteKubeconfig(plain_path, plain).ok());
  Result<kube::Kubeconfig> parsed = kube::LoadKubeconfig({plain_path});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<kube::RestConfig> rc =
      kube::RestConfigFromKubeconfig(*parsed, {}, SystemClock::Instance());
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(rc->host, "http://127.0.0.1:8080");
  EXPECT_EQ(rc->tls.ca_pem, "");
  EXPECT_FALSE(rc->tls.insecure_skip_verify);
  EXPECT_EQ(rc->bearer_token, "t");

  s = WriteKubeconfig(tmp.File("missing/kubeconfig"), Params());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing/kubeconfig"), std::string::npos) << s.ToString();
}

// The operator's client, configured only from the written kubeconfig, reaches a TLS server that
// serves EnsureServingCerts' certificate and checks EnsureAccessToken's token.
TEST(KubeconfigWriter, TheOperatorsClientConnectsWithTheWrittenKubeconfig) {
  ScratchDir tmp;
  testutil::LocalTlsServer server(tmp.path().string());
  Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  KubeconfigParams p;
  p.server = server.url();
  p.ca_pem = server.certs().ca_pem;
  p.token = server.token();
  const std::string path = tmp.File("kubeconfig");
  ASSERT_TRUE(WriteKubeconfig(path, p).ok());

  Result<kube::Kubeconfig> config = kube::LoadKubeconfig({path});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<kube::RestConfig> rc =
      kube::RestConfigFromKubeconfig(*config, {}, SystemClock::Instance());
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  kube::RestClientOptions options;
  options.max_attempts = 1;
  Result<std::unique_ptr<kube::RestClient>> client = kube::RestClient::Create(*rc, options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  kube::RestRequest request;
  request.path = "/version";
  Result<nlohmann::json> version = (*client)->DoJson(request);
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ((*version)["gitVersion"], testutil::kGitVersion);
  EXPECT_EQ(server.version_requests(), 1);
}

}  // namespace
}  // namespace sluice::apiserver
