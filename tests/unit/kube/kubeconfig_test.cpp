// Kubeconfig parsing and merging, in-cluster config, and the exec credential plugin (a shell
// script acting as the plugin).
#include "kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/time_format.h"
#include "kube/in_cluster.h"
#include "tests/support/temp_dir.h"

namespace sluice::kube {
namespace {

namespace fs = std::filesystem;

// A directory of this test's own, removed with everything in it.
class TempDir : public ::sluice::test_support::TempDir {
 public:
  TempDir() : ::sluice::test_support::TempDir("kubecfg") {}
};

constexpr char kMain[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://dev.example:6443
    certificate-authority: certs/ca.crt
    tls-server-name: kubernetes.default
- name: shared
  cluster:
    server: https://first.example
users:
- name: dev-user
  user:
    token: abc123
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
)";

constexpr char kSecond[] = R"(current-context: prod
clusters:
- name: shared
  cluster:
    server: https://second.example
- name: prod-cluster
  cluster:
    server: prod.example:443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
users:
- name: cert-user
  user:
    client-certificate: client.crt
    client-key: /abs/client.key
- name: basic-user
  user: {username: admin, password: hunter2}
- name: file-user
  user: {tokenFile: token.txt}
contexts:
- name: prod
  context: {cluster: prod-cluster, user: cert-user}
- name: basic
  context: {cluster: shared, user: basic-user}
- name: file
  context: {cluster: shared, user: file-user}
)";

TEST(KubeconfigTest, PathsFromEnvSplitDedupAndFallBackToHome) {
  EXPECT_EQ(KubeconfigPaths(std::string("/a:/b::/a"), "/home/u"),
            (std::vector<fs::path>{"/a", "/b"}));
  EXPECT_EQ(KubeconfigPaths(std::nullopt, "/home/u"),
            (std::vector<fs::path>{"/home/u/.kube/config"}));
  EXPECT_EQ(KubeconfigPaths(std::string(""), "/home/u"),
            (std::vector<fs::path>{"/home/u/.kube/config"}));
}

TEST(KubeconfigTest, MergesFilesFirstWinsAndResolvesRelativePaths) {
  TempDir dir;
  fs::create_directories(dir.path() / "second");
  const fs::path a = dir.Write("main.yaml", kMain);
  const fs::path b = dir.Write("second/config", kSecond);
  Result<Kubeconfig> cfg = LoadKubeconfig({a, dir.path() / "missing.yaml", b});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->current_context, "dev");  // The first file's wins.
  EXPECT_EQ(cfg->clusters.at("shared").server, "https://first.example");
  EXPECT_EQ(cfg->clusters.size(), 3u);
  EXPECT_EQ(cfg->clusters.at("dev-cluster").certificate_authority,
            (dir.path() / "certs/ca.crt").string());
  EXPECT_EQ(cfg->users.at("cert-user").client_certificate,
            (dir.path() / "second/client.crt").string());
  EXPECT_EQ(cfg->users.at("cert-user").client_key, "/abs/client.key");
  EXPECT_EQ(cfg->clusters.at("prod-cluster").certificate_authority_data,
            "-----BEGIN CERTIFICATE-----");

  FakeClock clock;
  Result<RestConfig> dev = RestConfigFromKubeconfig(*cfg, {}, clock);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(dev->host, "https://dev.example:6443");
  EXPECT_EQ(dev->bearer_token, "abc123");
  EXPECT_EQ(dev->default_namespace, "team-a");
  EXPECT_EQ(dev->tls.server_name, "kubernetes.default");
  EXPECT_EQ(dev->user_agent, "sluice-operator/0.1.0");
  EXPECT_EQ(dev->qps, 5.0);
  EXPECT_EQ(dev->burst, 10);

  Result<RestConfig> prod = RestConfigFromKubeconfig(*cfg, {"prod", ""}, clock);
  ASSERT_TRUE(prod.ok()) << prod.status().ToString();
  EXPECT_EQ(prod->host, "https://prod.example:443");
  EXPECT_EQ(prod->tls.client_key_file, "/abs/client.key");
  EXPECT_EQ(prod->default_namespace, "default");

  Result<RestConfig> basic = RestConfigFromKubeconfig(*cfg, {"basic", "ns2"}, clock);
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(basic->username, "admin");
  EXPECT_EQ(basic->password, "hunter2");
  EXPECT_EQ(basic->default_namespace, "ns2");

  Result<RestConfig> file = RestConfigFromKubeconfig(*cfg, {"file", ""}, clock);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->token_file, (dir.path() / "second/token.txt").string());

  Result<RestConfig> missing = RestConfigFromKubeconfig(*cfg, {"nope", ""}, clock);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("\"nope\""), std::string::npos);
}

TEST(KubeconfigTest, BadFilesAndUnsupportedSettingsAreClearErrors) {
  FakeClock clock;
  Result<Kubeconfig> bad = ParseKubeconfig("clusters: [unclosed", "/x/config");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/x/config"), std::string::npos);

  bad = ParseKubeconfig("clusters: {a: 1}", "/x/config");
  EXPECT_NE(bad.status().message().find("clusters must be a list"), std::string::npos);

  bad = ParseKubeconfig("clusters:\n- cluster: {server: x}\n", "/x/config");
  EXPECT_NE(bad.status().message().find("has no name"), std::string::npos);

  bad = ParseKubeconfig(
      "clusters:\n- name: c\n  cluster: {server: x, certificate-authority-data: '%%%'}\n", "f");
  EXPECT_NE(bad.status().message().find("base64"), std::string::npos);

  Result<Kubeconfig> proxy = ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {server: 'https://k', proxy-url: 'http://proxy:3128'}}]
contexts: [{name: c, context: {cluster: k}}]
)",
                                             "p.yaml");
  ASSERT_TRUE(proxy.ok());
  Result<RestConfig> rc = RestConfigFromKubeconfig(*proxy, {}, clock);
  ASSERT_FALSE(rc.ok());
  EXPECT_NE(rc.status().message().find("proxy-url"), std::string::npos);
  EXPECT_NE(rc.status().message().find("not support"), std::string::npos);

  Result<Kubeconfig> ap = ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {server: 'https://k'}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}, {name: both, user: {token: t, username: a}}]
contexts: [{name: c, context: {cluster: k, user: u}}, {name: d, context: {cluster: k, user: both}},
           {name: e, context: {cluster: k, user: ghost}}]
)",
                                          "a.yaml");
  ASSERT_TRUE(ap.ok()) << ap.status().ToString();
  EXPECT_NE(RestConfigFromKubeconfig(*ap, {}, clock).status().message().find("auth-provider"),
            std::string::npos);
  EXPECT_NE(RestConfigFromKubeconfig(*ap, {"d", ""}, clock).status().message().find("not both"),
            std::string::npos);
  EXPECT_EQ(RestConfigFromKubeconfig(*ap, {"e", ""}, clock).status().code(), StatusCode::kNotFound);

  Kubeconfig empty;
  EXPECT_NE(RestConfigFromKubeconfig(empty, {}, clock).status().message().find("current-context"),
            std::string::npos);
  EXPECT_EQ(LoadKubeconfig({"/nonexistent/a", "/nonexistent/b"}).status().code(),
            StatusCode::kNotFound);
}

TEST(KubeconfigTest, ExecStanzaIsParsedAndValidated) {
  FakeClock clock;
  Result<Kubeconfig> cfg = ParseKubeconfig(R"(current-context: eks
clusters: [{name: k, cluster: {server: 'https://eks'}}]
users:
- name: aws
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [eks, get-token, --cluster-name, prod]
      env: [{name: AWS_PROFILE, value: ops}]
      installHint: install the aws CLI
      interactiveMode: Never
- name: old
  user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}
contexts: [{name: eks, context: {cluster: k, user: aws}}, {name: old, context: {cluster: k, user: old}}]
)",
                                           "/home/u/.kube/config");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const ExecConfig& exec = *cfg->users.at("aws").exec;
  EXPECT_EQ(exec.command, "aws");
  EXPECT_EQ(exec.args.size(), 4u);
  EXPECT_EQ(exec.env.at(0).first, "AWS_PROFILE");
  EXPECT_EQ(exec.install_hint, "install the aws CLI");
  Result<RestConfig> rc = RestConfigFromKubeconfig(*cfg, {}, clock);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_NE(rc->exec, nullptr);
  Result<RestConfig> old = RestConfigFromKubeconfig(*cfg, {"old", ""}, clock);
  EXPECT_NE(old.status().message().find("v1alpha1"), std::string::npos);
}

TEST(ExecCredentialTest, ParsesV1AndV1beta1AndRejectsBadOutput) {
  Result<ExecCredential> c = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
          "status":{"token":"tok","expirationTimestamp":"2026-11-22T10:00:00Z"}})",
      kExecApiV1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "tok");
  EXPECT_EQ(FormatTime(*c->expiration), "2026-11-22T10:00:00Z");
  c = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
          "status":{"token":"t2"}})",
      kExecApiV1beta1);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->expiration.has_value());
  EXPECT_NE(ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1beta1",
      "kind":"ExecCredential","status":{"token":"t"}})",
                                kExecApiV1)
                .status()
                .message()
                .find("apiVersion"),
            std::string::npos);
  EXPECT_FALSE(ParseExecCredential("not json", kExecApiV1).ok());
  EXPECT_NE(ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1",
      "kind":"ExecCredential","status":{"clientCertificateData":"x"}})",
                                kExecApiV1)
                .status()
                .message()
                .find("client certificate"),
            std::string::npos);
}

TEST(ExecCredentialTest, RunsThePluginCachesUntilExpiryAndRerunsAfterInvalidate) {
  TempDir dir;
  // Counts its runs in a file and prints a token numbered by run; expiry from the environment.
  const fs::path plugin = dir.Write("plugin.sh", R"(#!/bin/sh
n=$(cat "$COUNT_FILE" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT_FILE"
case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) ;; *) echo "no exec info" >&2; exit 3;; esac
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"token-$n-$1\",\"expirationTimestamp\":\"$(cat "$EXPIRY_FILE")\"}}"
)",
                                    true);
  FakeClock clock;
  ExecConfig cfg;
  cfg.api_version = kExecApiV1;
  cfg.command = plugin.string();
  cfg.args = {"arg"};
  auto expire_in_15m = [&] {
    dir.Write("expiry", FormatTime(clock.WallNow() + std::chrono::minutes(15)));
  };
  expire_in_15m();
  cfg.env = {{"COUNT_FILE", (dir.path() / "count").string()},
             {"EXPIRY_FILE", (dir.path() / "expiry").string()}};
  ExecCredentialProvider provider(cfg, clock);
  Result<std::string> t = provider.Token();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "token-1-arg");
  EXPECT_EQ(*provider.Token(), "token-1-arg");  // Cached.
  EXPECT_EQ(provider.runs(), 1);
  clock.Advance(std::chrono::minutes(14));
  EXPECT_EQ(*provider.Token(), "token-1-arg");
  clock.Advance(std::chrono::minutes(1));  // Within the skew of the expiry: refreshed.
  expire_in_15m();
  EXPECT_EQ(*provider.Token(), "token-2-arg");
  provider.Invalidate("some-other-token");  // Not the cached one: ignored.
  EXPECT_EQ(*provider.Token(), "token-2-arg");
  provider.Invalidate("token-2-arg");
  EXPECT_EQ(*provider.Token(), "token-3-arg");
  EXPECT_EQ(provider.runs(), 3);
}

TEST(ExecCredentialTest, FailingOrMissingPluginIsUnauthenticatedWithHint) {
  TempDir dir;
  const fs::path plugin =
      dir.Write("fail.sh", "#!/bin/sh\necho 'token expired, run login' >&2\nexit 2\n", true);
  FakeClock clock;
  ExecConfig cfg;
  cfg.api_version = kExecApiV1beta1;
  cfg.command = plugin.string();
  cfg.install_hint = "see docs";
  ExecCredentialProvider provider(cfg, clock);
  Result<std::string> t = provider.Token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(t.status().message().find("exited with code 2"), std::string::npos);
  EXPECT_NE(t.status().message().find("run login"), std::string::npos);
  EXPECT_NE(t.status().message().find("see docs"), std::string::npos);

  cfg.command = "sluice-no-such-plugin";
  ExecCredentialProvider missing(cfg, clock);
  EXPECT_EQ(missing.Token().status().code(), StatusCode::kUnauthenticated);
}

TEST(InClusterTest, ReadsMountedFilesAndNeedsTheServiceEnv) {
  TempDir dir;
  InClusterPaths paths{dir.Write("token", "tok\n").string(), dir.Write("ca.crt", "pem").string(),
                       dir.Write("namespace", "sluice-system\n").string()};
  Result<RestConfig> rc = InClusterConfig("10.96.0.1", "443", paths);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(rc->host, "https://10.96.0.1:443");
  EXPECT_EQ(rc->token_file, paths.token_file);
  EXPECT_EQ(rc->tls.ca_file, paths.ca_file);
  EXPECT_EQ(rc->default_namespace, "sluice-system");
  EXPECT_EQ(InClusterConfig("fd00::1", "443", paths)->host, "https://[fd00::1]:443");
  EXPECT_EQ(InClusterConfig("", "443", paths).status().code(), StatusCode::kNotFound);
  paths.token_file = (dir.path() / "absent").string();
  EXPECT_EQ(InClusterConfig("10.96.0.1", "443", paths).status().code(), StatusCode::kNotFound);
}

TEST(KubeInClusterTest, PathsUnderAPodRoot) {
  const InClusterPaths paths = InClusterPathsUnder("/pods/p1/");
  EXPECT_EQ(paths.token_file, "/pods/p1/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(paths.ca_file, "/pods/p1/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
  EXPECT_EQ(paths.namespace_file,
            "/pods/p1/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  EXPECT_EQ(InClusterPathsUnder("/r").token_file,
            "/r/var/run/secrets/kubernetes.io/serviceaccount/token");
}

}  // namespace
}  // namespace sluice::kube
