// End-to-end: RolloutPool autoscaling against the real Prometheus (Debian's package). The test
// exports a pending-work gauge, Prometheus scrapes it every second, and the operator scales the
// pool to ceil(value / targetPerReplica): up at once, down only after the scale-down window; a
// broken query freezes the size with ScalingActive=False naming Prometheus's error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/node_process.h"

extern char** environ;

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kManifest[] = R"(apiVersion: sluice.dev/v1alpha1
kind: Dataflow
metadata:
  name: arith
spec:
  dataset:
    builtin: {generator: arithmetic, count: 100}
  workflow:
    type: single-turn
    roles: [{name: policy, policy: tiny}]
  reward: {type: exact-match}
  storage: {size: 64Mi}
---
apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: elastic
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: builtin, image: "sluice/testpod:dev"}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env: [{name: SLUICE_TESTPOD_MODE, value: worker}]
  replicas: 1
  drain: {gracePeriodSeconds: 10}
  autoscaling:
    minReplicas: 1
    maxReplicas: 4
    syncPeriodSeconds: 1
    scaleDownStabilizationSeconds: 8
    metrics:
      - name: pending-work
        query: sum(test_pending_work{pool="$pool"})
        targetPerReplica: 10
)";

class Prometheus {
 public:
  ~Prometheus() { Stop(); }
  bool Start(const std::string& dir, int target_port) {
    port_ = NodeProcess::FreePort();
    std::ofstream(dir + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1m\nscrape_configs:\n"
           "  - job_name: test\n    static_configs:\n      - targets: ['127.0.0.1:"
        << target_port << "']\n";
    std::vector<std::string> args = {
        "/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
        "--storage.tsdb.path=" + dir + "/prom-data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir + "/prometheus.log";
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    http::ClientOptions options;
    options.base_url = Url();
    options.max_attempts = 1;
    auto client = http::Client::Create(options);
    return client.ok() && WaitUntil(
                              [&] {
                                auto r = (*client)->Get("/-/ready");
                                return r.ok() && r->status == 200;
                              },
                              std::chrono::seconds(60));
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST(OperatorAutoscaleTest, ReplicasFollowThePrometheusMetricWithAScaleDownWindow) {
  if (!HaveKubectl()) GTEST_SKIP() << "kubectl is not installed";
  if (::access("/usr/bin/prometheus", X_OK) != 0) GTEST_SKIP() << "prometheus is not installed";
  char tmpl[] = "/tmp/sluice-autoscale-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string state = dir + "/state";

  // The exporter: the gauge the pool scales on.
  std::atomic<int> pending{0};
  log::Logger logger("test");
  http::ServerOptions exporter_options;
  exporter_options.access_log = false;
  http::Server exporter(exporter_options, nullptr, logger);
  exporter.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("# TYPE test_pending_work gauge\ntest_pending_work{pool=\"elastic\"} " +
                        std::to_string(pending.load()) + "\n",
                    "text/plain; version=0.0.4");
  });
  ASSERT_TRUE(exporter.Start().ok());
  Prometheus prometheus;
  ASSERT_TRUE(prometheus.Start(dir, exporter.port()));

  std::ofstream(dir + "/cluster.yaml") << kTestClusterConfig;
  const std::string sluice = BinDir() + "/sluice";
  CommandResult up =
      RunShell("SLUICE_OPERATOR_PROMETHEUS_URL=" + prometheus.Url() +
               " SLUICE_OPERATOR_STATUS_PERIOD=500ms " + sluice + " up --config " + dir +
               "/cluster.yaml --state-dir " + state + " --bin-dir " + BinDir() +
               " --apiserver-port " + std::to_string(NodeProcess::FreePort()) + " --node-port " +
               std::to_string(NodeProcess::FreePort()) + " --operator-port " +
               std::to_string(NodeProcess::FreePort()));
  ASSERT_EQ(up.exit_code, 0) << up.output;
  auto kubectl = [&](const std::string& args) {
    return RunShell("/usr/bin/kubectl --kubeconfig " + state + "/kubeconfig " + args);
  };
  auto replicas = [&] {
    CommandResult r = kubectl("get rolloutpool elastic -o jsonpath={.spec.replicas}");
    return r.exit_code == 0 && !r.output.empty() ? std::stoi(r.output) : -1;
  };
  auto operator_log = [&] {
    std::ifstream in(state + "/logs/operator.log");
    std::stringstream s;
    s << in.rdbuf();
    const std::string text = s.str();
    return text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
  };
  std::ofstream(dir + "/manifest.yaml") << kManifest;
  ASSERT_EQ(kubectl("apply -f " + dir + "/manifest.yaml").exit_code, 0);

  // 35 pending at 10 per replica: 4 replicas, at once.
  pending = 35;
  ASSERT_TRUE(WaitUntil([&] { return replicas() == 4; }, std::chrono::seconds(60)))
      << kubectl("get rolloutpool elastic -o yaml").output << operator_log();
  CommandResult events = kubectl("get events --field-selector involvedObject.name=elastic");
  EXPECT_NE(events.output.find("ScaledUp"), std::string::npos) << events.output;
  EXPECT_NE(events.output.find("pending-work=35"), std::string::npos) << events.output;

  // Load drops to 5 (1 replica): the scale-down window (8 s) keeps 4 for a while, then 1.
  pending = 5;
  const auto dropped = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_EQ(replicas(), 4) << "scaled down inside the stabilisation window";
  ASSERT_TRUE(WaitUntil([&] { return replicas() == 1; }, std::chrono::seconds(60)))
      << kubectl("get rolloutpool elastic -o yaml").output;
  EXPECT_GE(std::chrono::steady_clock::now() - dropped, std::chrono::seconds(7));

  // A broken query freezes the size and says why.
  ASSERT_EQ(kubectl("patch rolloutpool elastic --type=json -p "
                    "'[{\"op\":\"replace\",\"path\":\"/spec/autoscaling/metrics/0/query\","
                    "\"value\":\"sum(\"}]'")
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return kubectl(
                   "get rolloutpool elastic -o "
                   "jsonpath='{.status.conditions[?(@.type==\"ScalingActive\")]"
                   ".status}'")
                   .output == "False";
      },
      std::chrono::seconds(30)))
      << kubectl("get rolloutpool elastic -o yaml").output;
  EXPECT_NE(
      kubectl(
          "get rolloutpool elastic -o jsonpath='{.status.conditions[?(@.type==\"ScalingActive\")]"
          ".message}'")
          .output.find("parse error"),
      std::string::npos);
  EXPECT_EQ(replicas(), 1);

  CommandResult down = RunShell(sluice + " down --state-dir " + state);
  EXPECT_EQ(down.exit_code, 0) << down.output;
  prometheus.Stop();
  exporter.Shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::e2e
