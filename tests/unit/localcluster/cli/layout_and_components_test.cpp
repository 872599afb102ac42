// Tests of the state-directory layout, the component plan (what `sluice up` starts, with which
// flags), the Prometheus configuration and the cluster-config lookup order.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "localcluster/cli/components.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/prometheus_config.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {
namespace {

TEST(StateLayoutTest, Paths) {
  StateLayout layout("/s/");
  EXPECT_EQ(layout.root(), "/s");
  EXPECT_EQ(layout.ApiServerDir(), "/s/apiserver");
  EXPECT_EQ(layout.ApiServerToken(), "/s/apiserver/token");
  EXPECT_EQ(layout.ApiServerCa(), "/s/apiserver/pki/ca.crt");
  EXPECT_EQ(layout.Kubeconfig(), "/s/kubeconfig");
  EXPECT_EQ(layout.NodeDir(), "/s/node");
  EXPECT_EQ(layout.LogFile("node"), "/s/logs/node.log");
  EXPECT_EQ(layout.PidFile("apiserver"), "/s/run/apiserver.pid");
  EXPECT_EQ(layout.PrometheusConfig(), "/s/prometheus/prometheus.yml");
  EXPECT_EQ(layout.PrometheusData(), "/s/prometheus/data");
  EXPECT_EQ(layout.PrometheusPodTargets(), "/s/prometheus/targets/pods.json");
}

TEST(StateLayoutTest, DefaultAndAbsolute) {
  EXPECT_EQ(*DefaultStateDir({{"HOME", "/home/ada/"}}), "/home/ada/.sluice");
  EXPECT_FALSE(DefaultStateDir({}).ok());
  EXPECT_FALSE(DefaultStateDir({{"HOME", ""}}).ok());
  EXPECT_EQ(AbsolutePath("state", "/work"), "/work/state");
  EXPECT_EQ(AbsolutePath("./a/../b/", "/work"), "/work/b");
  EXPECT_EQ(AbsolutePath("/abs/dir", "/work"), "/abs/dir");
}

ClusterPlan Plan(bool prometheus) {
  ClusterPlan plan;
  plan.layout = StateLayout("/s");
  plan.bin_dir = "/b";
  plan.cluster_config = "/c.yaml";
  plan.apiserver_port = 7443;
  plan.node_port = 11250;
  plan.prometheus = prometheus;
  return plan;
}

TEST(ComponentsTest, PlanInOrderWithFlags) {
  std::vector<ComponentSpec> c = PlanComponents(Plan(false));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "apiserver");
  EXPECT_EQ(c[0].binary, "/b/sluice-apiserver");
  EXPECT_EQ(c[0].args, (std::vector<std::string>{"--state-dir", "/s/apiserver", "--kubeconfig",
                                                 "/s/kubeconfig", "--port", "7443"}));
  EXPECT_EQ(c[0].health.kind, HealthKind::kApiServerReadyz);
  EXPECT_EQ(c[0].health.kubeconfig, "/s/kubeconfig");
  EXPECT_TRUE(c[0].installs_crds);
  EXPECT_EQ(c[0].remove_before_start, std::vector<std::string>{"/s/kubeconfig"});
  EXPECT_FALSE(c[0].optional);

  EXPECT_EQ(c[1].name, "node");
  EXPECT_EQ(c[1].binary, "/b/sluice-node");
  EXPECT_EQ(c[1].args,
            (std::vector<std::string>{"--kubeconfig", "/s/kubeconfig", "--cluster-config",
                                      "/c.yaml", "--state-dir", "/s/node", "--port", "11250",
                                      "--bin-dir", "/b", "--pod-ip-prefix", "127.1"}));
  EXPECT_EQ(c[1].health.kind, HealthKind::kHttpGet);
  EXPECT_EQ(c[1].health.base_url + c[1].health.path, "http://127.0.0.1:11250/readyz");
  EXPECT_FALSE(c[1].optional);

  EXPECT_EQ(c[2].name, "operator");
  EXPECT_EQ(c[2].binary, "/b/sluice-operator");
  // Its own ServiceAccount's kubeconfig (operator_identity.h), its Lease in its namespace;
  // loopback binds: pods own their 127.x addresses' ports.
  EXPECT_EQ(c[2].args, (std::vector<std::string>{
                           "--kubeconfig", "/s/operator/kubeconfig", "--leader-election-namespace",
                           "sluice-system", "--metrics-bind-address", "127.0.0.1:18080",
                           "--health-probe-bind-address", "127.0.0.1:18081"}));
  EXPECT_EQ(c[2].health.kind, HealthKind::kHttpGet);
  EXPECT_EQ(c[2].health.base_url + c[2].health.path, "http://127.0.0.1:18081/readyz");
  EXPECT_TRUE(c[2].optional);
}

// `sluice up --no-operator`: the cluster without an operator (the Helm chart installs one).
TEST(ComponentsTest, PlanWithoutTheOperator) {
  ClusterPlan plan = Plan(true);
  plan.run_operator = false;
  std::vector<ComponentSpec> c = PlanComponents(plan);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "apiserver");
  EXPECT_EQ(c[1].name, "node");
  EXPECT_EQ(c[2].name, "prometheus");
}

TEST(ComponentsTest, PrometheusComponent) {
  std::vector<ComponentSpec> c = PlanComponents(Plan(true));
  ASSERT_EQ(c.size(), 4u);
  const ComponentSpec& p = c[3];
  EXPECT_EQ(p.name, "prometheus");
  EXPECT_EQ(p.binary, "/usr/bin/prometheus");
  EXPECT_EQ(p.args, (std::vector<std::string>{"--config.file=/s/prometheus/prometheus.yml",
                                              "--storage.tsdb.path=/s/prometheus/data",
                                              "--web.listen-address=127.0.0.1:9090"}));
  EXPECT_EQ(p.health.base_url + p.health.path, "http://127.0.0.1:9090/-/ready");
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_EQ(p.files[0].first, "/s/prometheus/prometheus.yml");
  EXPECT_NE(p.files[0].second.find("127.0.0.1:7443"), std::string::npos);
  EXPECT_NE(p.files[0].second.find("  scrape_interval: 15s\n  evaluation_interval: 15s\n"),
            std::string::npos);
  // The operator's default Prometheus for autoscaled pools is this one.
  std::vector<std::string> operator_args = PlanComponents(Plan(false))[2].args;
  operator_args.insert(operator_args.end(), {"--prometheus-url", "http://127.0.0.1:9090"});
  EXPECT_EQ(c[2].args, operator_args);
  EXPECT_NE(p.files[0].second.find("\"/s/prometheus/targets/pods.json\""), std::string::npos);
  // The node agent keeps the pods' target list only for Prometheus.
  std::vector<std::string> node_args = PlanComponents(Plan(false))[1].args;
  node_args.insert(node_args.end(),
                   {"--prometheus-targets-file", "/s/prometheus/targets/pods.json"});
  EXPECT_EQ(c[1].args, node_args);
}

// --prometheus-port and --prometheus-scrape-interval reach Prometheus, its config and the operator.
TEST(ComponentsTest, PrometheusPortAndScrapeInterval) {
  ClusterPlan plan = Plan(true);
  plan.prometheus_port = 19090;
  plan.prometheus_scrape_interval = std::chrono::milliseconds(500);
  std::vector<ComponentSpec> c = PlanComponents(plan);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[3].args.back(), "--web.listen-address=127.0.0.1:19090");
  EXPECT_EQ(c[3].health.base_url, "http://127.0.0.1:19090");
  EXPECT_NE(c[3].files[0].second.find("  scrape_interval: 500ms\n  evaluation_interval: 500ms\n"),
            std::string::npos);
  EXPECT_EQ(c[2].args[c[2].args.size() - 2], "--prometheus-url");
  EXPECT_EQ(c[2].args.back(), "http://127.0.0.1:19090");
  plan.prometheus_scrape_interval = std::chrono::seconds(2);
  EXPECT_NE(PlanComponents(plan)[3].files[0].second.find("  scrape_interval: 2s\n"),
            std::string::npos);
}

TEST(ComponentsTest, KnownComponentsAndHealthFromCommandLine) {
  EXPECT_EQ(KnownComponentNames(), "apiserver, node, operator, prometheus");
  ASSERT_NE(FindKnownComponent("node"), nullptr);
  EXPECT_EQ(FindKnownComponent("node")->binary_name, "sluice-node");
  EXPECT_EQ(FindKnownComponent("kubelet"), nullptr);

  StateLayout layout("/s");
  HealthCheck h = HealthFromCommandLine(
      "node", layout, {"/b/sluice-node", "--kubeconfig", "/s/kubeconfig", "--port", "12000"});
  EXPECT_EQ(h.base_url + h.path, "http://127.0.0.1:12000/readyz");
  h = HealthFromCommandLine("node", layout, {"/b/sluice-node", "--port=12001"});
  EXPECT_EQ(h.base_url, "http://127.0.0.1:12001");
  h = HealthFromCommandLine("apiserver", layout, {"/b/sluice-apiserver"});
  EXPECT_EQ(h.kind, HealthKind::kApiServerReadyz);
  EXPECT_EQ(h.kubeconfig, "/s/kubeconfig");
  h = HealthFromCommandLine("prometheus", layout,
                            {"prometheus", "--web.listen-address=127.0.0.1:9999"});
  EXPECT_EQ(h.base_url + h.path, "http://127.0.0.1:9999/-/ready");
  h = HealthFromCommandLine("operator", layout, {});
  EXPECT_EQ(h.base_url + h.path, "http://127.0.0.1:18081/readyz");
  h = HealthFromCommandLine("operator", layout,
                            {"/b/sluice-operator", "--health-probe-bind-address", "127.0.0.1:7"});
  EXPECT_EQ(h.base_url + h.path, "http://127.0.0.1:7/readyz");
}

TEST(PrometheusConfigTest, ScrapesApiServerOverHttpsWithTokenAndNodeOverHttp) {
  PrometheusTargets t;
  t.apiserver_port = 6443;
  t.apiserver_token_file = "/home/a b/.sluice/apiserver/token";
  t.apiserver_ca_file = "/home/a b/.sluice/apiserver/pki/ca.crt";
  t.node_port = 10250;
  t.pod_targets_file = "/home/a b/.sluice/prometheus/targets/pods.json";
  const YAML::Node doc = YAML::Load(RenderPrometheusConfig(t));
  ASSERT_TRUE(doc["scrape_configs"].IsSequence());
  ASSERT_EQ(doc["scrape_configs"].size(), 3u);
  const YAML::Node api = doc["scrape_configs"][0];
  EXPECT_EQ(api["job_name"].as<std::string>(), "sluice-apiserver");
  EXPECT_EQ(api["scheme"].as<std::string>(), "https");
  EXPECT_EQ(api["metrics_path"].as<std::string>(), "/metrics");
  EXPECT_EQ(api["authorization"]["type"].as<std::string>(), "Bearer");
  EXPECT_EQ(api["authorization"]["credentials_file"].as<std::string>(), t.apiserver_token_file);
  EXPECT_EQ(api["tls_config"]["ca_file"].as<std::string>(), t.apiserver_ca_file);
  EXPECT_EQ(api["static_configs"][0]["targets"][0].as<std::string>(), "127.0.0.1:6443");
  const YAML::Node node = doc["scrape_configs"][1];
  EXPECT_EQ(node["job_name"].as<std::string>(), "sluice-node");
  EXPECT_EQ(node["scheme"].as<std::string>(), "http");
  EXPECT_EQ(node["static_configs"][0]["targets"][0].as<std::string>(), "127.0.0.1:10250");
  EXPECT_EQ(doc["global"]["scrape_interval"].as<std::string>(), "15s");
}

TEST(PrometheusConfigTest, ScrapesTheWorkerPodsFromTheNodeAgentsTargetsFile) {
  PrometheusTargets t;
  t.pod_targets_file = "/home/a b/.sluice/prometheus/targets/pods.json";
  const YAML::Node doc = YAML::Load(RenderPrometheusConfig(t));
  ASSERT_EQ(doc["scrape_configs"].size(), 3u);
  const YAML::Node pods = doc["scrape_configs"][2];
  EXPECT_EQ(pods["job_name"].as<std::string>(), "sluice-pods");
  EXPECT_EQ(pods["scheme"].as<std::string>(), "http");
  // A target group whose pod is annotated prometheus.io/scheme: https is scraped over TLS
  // without checking the namespace CA's certificate.
  EXPECT_TRUE(pods["tls_config"]["insecure_skip_verify"].as<bool>());
  ASSERT_EQ(pods["file_sd_configs"].size(), 1u);
  const YAML::Node sd = pods["file_sd_configs"][0];
  ASSERT_EQ(sd["files"].size(), 1u);
  EXPECT_EQ(sd["files"][0].as<std::string>(), t.pod_targets_file);
  EXPECT_EQ(sd["refresh_interval"].as<std::string>(), "5s");
  // Each target group brings __metrics_path__ and its labels: a job-wide path or relabelling
  // would override or drop them.
  EXPECT_FALSE(pods["metrics_path"]);
  EXPECT_FALSE(pods["relabel_configs"]);
  EXPECT_FALSE(pods["static_configs"]);
}

TEST(InstallPathsTest, ClusterConfigCandidates) {
  EXPECT_EQ(ClusterConfigCandidates("/src/build/bin", "/home/a"),
            (std::vector<std::string>{"/src/examples/local-cluster.yaml",
                                      "/home/a/examples/local-cluster.yaml"}));
  Result<std::string> missing = FindClusterConfig("/no/such/file.yaml", "/b", "/");
  EXPECT_EQ(missing.status().message(), "flag --config: /no/such/file.yaml does not exist");
  missing = FindClusterConfig("", "/no/such/bin", "/no/such/cwd");
  EXPECT_NE(missing.status().message().find("pass --config FILE"), std::string::npos);
}

}  // namespace
}  // namespace sluice::cli
