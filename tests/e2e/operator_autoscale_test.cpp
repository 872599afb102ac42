// End-to-end: RolloutPool autoscaling against the real Prometheus (Debian's package). The test
// exports a pending-work gauge, Prometheus scrapes it every second, and the operator scales the
// pool to ceil(value / targetPerReplica): up at once, down only after the scale-down window; a
// broken query freezes the size with ScalingActive=False naming Prometheus's error. A second test
// checks that `sluice up --prometheus` scrapes the worker pods.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/http/url.h"
#include "common/logging/logger.h"
#include "tests/e2e/sluice_session.h"
#include "tests/support/free_port.h"

extern char** environ;

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kPool[] = R"(apiVersion: sluice.dev/v1alpha1
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
    port_ = test_support::FreePort();
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
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  ASSERT_EQ(::access("/usr/bin/prometheus", X_OK), 0)
      << "/usr/bin/prometheus is missing (scripts/install-deps.sh installs it)";
  SluiceSession cluster;

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
  ASSERT_TRUE(prometheus.Start(cluster.dir(), exporter.port()));
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_PROMETHEUS_URL=" + prometheus.Url() +
                         " SLUICE_OPERATOR_STATUS_PERIOD=500ms"))
      << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto replicas = [&] {
    const std::string r = cluster.JsonPath("rolloutpool elastic", "{.spec.replicas}");
    return r.empty() ? -1 : std::stoi(r);
  };
  auto operator_log = [&] { return cluster.Log("operator"); };
  ASSERT_EQ(cluster.Apply(std::string(kTestDataflowManifest) + "---\n" + kPool), 0);

  // 35 pending at 10 per replica: 4 replicas, at once.
  pending = 35;
  ASSERT_TRUE(WaitUntil([&] { return replicas() == 4; }, std::chrono::seconds(60)))
      << kubectl("get rolloutpool elastic -o yaml").output << operator_log();
  CommandResult events = kubectl("get events --field-selector involvedObject.name=elastic");
  EXPECT_NE(events.output.find("ScaledUp"), std::string::npos) << events.output;
  EXPECT_NE(events.output.find("pending-work=35"), std::string::npos) << events.output;
  {
    // The operator exports the decision (and, still at 35, keeps it at 4).
    http::ClientOptions options;
    options.base_url = "http://127.0.0.1:" + std::to_string(cluster.operator_port());
    auto client = http::Client::Create(options);
    ASSERT_TRUE(client.ok());
    auto scrape = (*client)->Get("/metrics");
    ASSERT_TRUE(scrape.ok()) << scrape.status().ToString();
    EXPECT_NE(scrape->body.find(
                  "sluice_autoscaler_desired_replicas{namespace=\"default\",pool=\"elastic\"} 4"),
              std::string::npos)
        << scrape->body;
  }

  // Load drops to 5 (1 replica): the scale-down window (8 s) keeps 4 for a while, then 1.
  pending = 5;
  const auto dropped = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_EQ(replicas(), 4) << "scaled down inside the stabilisation window";
  ASSERT_TRUE(WaitUntil([&] { return replicas() == 1; }, std::chrono::seconds(60)))
      << kubectl("get rolloutpool elastic -o yaml").output;
  // The window holds the last high recommendation for 8 s at whole-second resolution (7 s and a
  // bit at the least), and that recommendation may have come up to one sync period (1 s) before
  // the drop, so 6 s is the earliest a correct autoscaler may go down; CI once saw 6.94 s.
  EXPECT_GE(std::chrono::steady_clock::now() - dropped, std::chrono::seconds(6));

  // A broken query freezes the size and says why.
  ASSERT_EQ(kubectl("patch rolloutpool elastic --type=json -p "
                    "'[{\"op\":\"replace\",\"path\":\"/spec/autoscaling/metrics/0/query\","
                    "\"value\":\"sum(\"}]'")
                .exit_code,
            0);
  const std::string active = "{.status.conditions[?(@.type==\"ScalingActive\")]";
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster.JsonPath("rolloutpool elastic", active + ".status}") == "False"; },
      std::chrono::seconds(30)))
      << kubectl("get rolloutpool elastic -o yaml").output;
  EXPECT_NE(cluster.JsonPath("rolloutpool elastic", active + ".message}").find("parse error"),
            std::string::npos);
  EXPECT_EQ(replicas(), 1);

  EXPECT_EQ(cluster.Down().exit_code, 0);
  prometheus.Stop();
  exporter.Shutdown();
}

// ---------------------------------------------------------------------------------------------
// `sluice up --prometheus` scrapes the worker pods (docs/local-cluster.md, "Prometheus"): the
// node agent lists the annotated dataflow pod in DIR/prometheus/targets/pods.json, Prometheus's
// `sluice-pods` job scrapes it under the labels the example queries select on, and the pod leaves
// the list when it is deleted. The Prometheus of `up` listens on the fixed 127.0.0.1:9090, so the
// test waits a while for that port to be free and fails naming it when it is not.

bool LoopbackPortTaken(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool taken = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return taken;
}

TEST(OperatorAutoscaleTest, UpWithPrometheusScrapesTheWorkerPods) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary()
                             << " is missing: this test drives the cluster with it";
  ASSERT_EQ(::access("/usr/bin/prometheus", X_OK), 0)
      << "/usr/bin/prometheus is missing (scripts/install-deps.sh installs Debian's prometheus)";
  ASSERT_TRUE(WaitUntil([] { return !LoopbackPortTaken(9090); }, std::chrono::seconds(60)))
      << "127.0.0.1:9090, where sluice up --prometheus starts Prometheus, stayed taken";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("", "--prometheus")) << cluster.up().output;
  ASSERT_EQ(cluster.Apply(kTestDataflowManifest), 0);
  http::ClientOptions options;
  options.base_url = "http://127.0.0.1:9090";
  options.max_attempts = 1;
  auto client = http::Client::Create(options);
  ASSERT_TRUE(client.ok());
  // An object always (empty when the request or the parse failed), so value() never throws.
  auto get_json = [&](const std::string& path) {
    auto r = (*client)->Get(path);
    json reply = r.ok() && r->status == 200 ? json::parse(r->body, nullptr, false) : json();
    return reply.is_object() ? reply : json::object();
  };
  auto targets_file = [&] {
    std::ifstream in(cluster.state() + "/prometheus/targets/pods.json");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };

  // The dataflow pod's target: up, at its pod IP's port 8080, with the labels queries match on.
  json target;
  const bool up = WaitUntil(
      [&] {
        const json reply = get_json("/api/v1/targets?state=active");
        for (const json& t : reply.value("/data/activeTargets"_json_pointer, json::array())) {
          if (t.value("/labels/job"_json_pointer, "") == "sluice-pods" &&
              t.value("/labels/pod"_json_pointer, "") == "arith-dataflow") {
            target = t;
            return t.value("health", "") == "up";
          }
        }
        return false;
      },
      std::chrono::seconds(120));
  ASSERT_TRUE(up) << target.dump(2) << "\ntargets file:\n"
                  << targets_file() << cluster.Log("node") << cluster.Log("prometheus");
  EXPECT_EQ(target.value("/labels/namespace"_json_pointer, ""), "default");
  EXPECT_EQ(target.value("/labels/dataflow"_json_pointer, ""), "arith");
  EXPECT_EQ(target.value("/labels/component"_json_pointer, ""), "dataflow");
  const std::string pod_ip = cluster.JsonPath("pod arith-dataflow", "{.status.podIP}");
  EXPECT_EQ(target.value("scrapeUrl", ""), "https://" + pod_ip + ":8080/metrics");

  // The selector of the example RolloutPools finds the dataflow's series.
  const std::string query =
      "/api/v1/query?query=" + http::PercentEncode(
                                   "sum(sluice_dataflow_rollout_demand{"
                                   "namespace=\"default\",dataflow=\"arith\"})");
  EXPECT_TRUE(WaitUntil(
      [&] { return get_json(query).value("/data/result"_json_pointer, json::array()).size() == 1; },
      std::chrono::seconds(60)))
      << get_json(query).dump();

  // A deleted pod leaves the list.
  ASSERT_EQ(cluster.Kubectl("delete dataflow arith --wait=true --timeout=60s").exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return targets_file().find("arith-dataflow") == std::string::npos; },
                        std::chrono::seconds(60)))
      << targets_file();
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
