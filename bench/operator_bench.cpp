// sluice_bench_operator: the operator at scale (issue 7): N RolloutPools of R replicas each
// (default 1,000 x 4) applied at once to a local API server, against the real sluice-operator
// binary.
//
//   1. Converge: time from the first pool created until every pool's Pods exist (N x R) and every
//      pool's status says so (observedGeneration current, status.replicas = R).
//   2. Memory: the operator's resident set before the pools (caches synced, one Dataflow), after
//      convergence, and its peak (VmHWM), from /proc.
//   3. Steady state: the operator is stopped and the RolloutPool controller is run in this process
//      on the operator's own caches (operator/manager.h) of the same server, synced; every pool is
//      reconciled three times and each Reconcile is timed. Nothing changes, so a reconcile reads
//      its caches and writes nothing; that it wrote nothing is checked (the server's
//      resourceVersion does not move), so the figures exclude API round trips.
//
// The API server runs in this process on in-memory storage (no fsync) and without its per-client
// rate limit, so the run measures the operator rather than the server. There is no node agent: Pods
// stay Pending, as they would on a cluster whose nodes are full; running 4,000 worker processes on
// a 2-core machine would measure the machine. The pools have no spec.autoscaling and their Pods no
// IP, so no Prometheus query and no worker /v1/status call is made.
//
// Flags: --pools N (1000), --replicas R (4), --qps Q (the operator's --kube-api-qps; 0: no
// client-side limit, the default here; the operator's own default is 50), --concurrency C
// (--rolloutpool-concurrency, 4), --quick (100 pools).
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/rest_client.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/kubeconfig_writer.h"
#include "localcluster/cli/crd_install.h"
#include "operator/controllers/rolloutpool/reconciler.h"
#include "operator/manager.h"
#include "tests/e2e/child_process.h"
#include "tests/e2e/node_process.h"
#include "tests/support/free_port.h"
#include "tests/support/in_process_api_server.h"

namespace sluice::bench {
namespace {

using nlohmann::json;
constexpr char kToken[] = "operator-bench-token";
constexpr char kNs[] = "bench";

struct Flags {
  int pools = 1000;
  int replicas = 4;
  double qps = 0;
  int concurrency = 4;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) Fail(std::string(name) + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") {
      f.pools = 100;
    } else if (a == "--pools") {
      f.pools = std::atoi(value("--pools"));
    } else if (a == "--replicas") {
      f.replicas = std::atoi(value("--replicas"));
    } else if (a == "--qps") {
      f.qps = std::atof(value("--qps"));
    } else if (a == "--concurrency") {
      f.concurrency = std::atoi(value("--concurrency"));
    } else {
      Fail("unknown flag " + a + " (--pools N, --replicas R, --qps Q, --concurrency C, --quick)");
    }
  }
  if (f.pools < 1 || f.replicas < 1 || f.concurrency < 1 || f.qps < 0) Fail("bad flag value");
  return f;
}

// Resident and peak resident set of a process, in MiB, from /proc/<pid>/status.
std::pair<double, double> MemoryMiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  double rss = 0, hwm = 0;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::atof(line.c_str() + 6) / 1024;
  }
  if (rss == 0) Fail("cannot read /proc/" + std::to_string(pid) + "/status");
  return {rss, hwm};
}

// User plus system CPU time a process has used, in seconds, from /proc/<pid>/stat.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // The command name may hold spaces.
  if (close == std::string::npos) Fail("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  // Fields from the state (3rd): utime and stime are the 14th and 15th.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

json Pool(const std::string& name, int replicas) {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "RolloutPool"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec",
           {{"policies", {"tiny"}},
            {"dataflowRef", {{"name", "arith"}}},
            {"engine", {{"type", "builtin"}}},
            {"template", {{"resources", {{"cpu", 1}, {"memory", "1Gi"}}}}},
            {"replicas", replicas}}}};
}

std::string QpsText(double qps) {
  if (qps == 0) return "0 (unlimited)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", qps);
  return buf;
}

// The operator child, killed if the run fails.
pid_t& OperatorPid() {
  static pid_t pid = -1;
  return pid;
}

class Bench {
 public:
  explicit Bench(Flags flags) : flags_(flags) {}

  void Run() {
    StartApiServer();
    InstallObjects();
    std::printf(
        "operator at scale: %d RolloutPools x %d replicas; operator --kube-api-qps %s, "
        "--rolloutpool-concurrency %d; in-memory local API server, no node agent\n",
        flags_.pools, flags_.replicas, QpsText(flags_.qps).c_str(), flags_.concurrency);
    StartOperator();
    StartInformers();
    Converge();
    SteadyState();
  }

 private:
  void StartApiServer() {
    test_support::InProcessApiServerOptions options;
    options.token = kToken;
    // No per-client rate limit (sluice-apiserver's default is 200 requests/s per token, which the
    // operator and this bench would share): the run measures the operator, not the server's limit.
    options.rate_limit_qps = 0;
    // As sluice-apiserver: every open watch holds a worker.
    options.worker_threads = 256;
    options.max_queued_connections = 256;
    Result<std::unique_ptr<test_support::InProcessApiServer>> server =
        test_support::InProcessApiServer::Create(options);
    Check(server.status(), "api server");
    server_ = std::move(*server);
    rest_ = &server_->rest();
    dynamic_ = &server_->dynamic();
    TempPath() = (std::filesystem::temp_directory_path() /
                  ("sluice-operator-bench-" + std::to_string(::getpid())))
                     .string();
    std::filesystem::create_directories(TempPath());
    apiserver::KubeconfigParams kc;
    kc.server = server_->base_url();
    kc.insecure = true;
    kc.token = kToken;
    Check(apiserver::WriteKubeconfig(TempPath() + "/kubeconfig", kc), "kubeconfig");
  }

  void InstallObjects() {
    const std::vector<json> crds = cli::EmbeddedCrds();
    Check(cli::InstallCrds(*rest_, crds).status(), "install CRDs");
    std::vector<std::string> names;
    for (const json& c : crds) names.push_back(c["metadata"]["name"].get<std::string>());
    Check(cli::WaitCrdsEstablished(*rest_, names, std::chrono::seconds(30)), "CRDs established");
    Create({"", "v1", "namespaces", false}, "",
           {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}});
    Create({"sluice.dev", "v1alpha1", "policies", true}, kNs, json::parse(R"({
      "apiVersion": "sluice.dev/v1alpha1", "kind": "Policy",
      "metadata": {"name": "tiny", "namespace": "bench"},
      "spec": {"model": {"source": {"builtin":
        {"layers": 2, "hiddenSize": 64, "heads": 4, "kvHeads": 2}}}}})"));
    Create({"sluice.dev", "v1alpha1", "dataflows", true}, kNs, json::parse(R"({
      "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
      "metadata": {"name": "arith", "namespace": "bench"},
      "spec": {
        "dataset": {"builtin": {"generator": "arithmetic", "count": 100}},
        "workflow": {"type": "single-turn", "roles": [{"name": "policy", "policy": "tiny"}]},
        "reward": {"type": "exact-match"},
        "storage": {"size": "64Mi"}}})"));
  }

  void Create(const kube::GroupVersionResource& gvr, const std::string& ns, const json& object) {
    Check(dynamic_->Resource(gvr, ns).Create(object).status(),
          "create " + object["kind"].get<std::string>());
  }

  void StartOperator() {
    const std::vector<int> ports = test_support::FreePorts(2);
    metrics_port_ = ports[0];
    const int metrics_port = metrics_port_;
    const int health_port = ports[1];
    operator_ = std::make_unique<e2e::ChildProcess>(
        "sluice-operator",
        std::vector<std::string>{
            "--kubeconfig=" + TempPath() + "/kubeconfig", "--leader-elect=false",
            "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port),
            "--health-probe-bind-address=127.0.0.1:" + std::to_string(health_port),
            "--kube-api-qps=" + std::to_string(flags_.qps),
            "--rolloutpool-concurrency=" + std::to_string(flags_.concurrency), "--log-level=warn"},
        TempPath() + "/operator.log");
    OperatorPid() = operator_->pid();
    OnFail() = [] {
      if (OperatorPid() > 0) ::kill(OperatorPid(), SIGKILL);
    };
    http::ClientOptions co;
    co.base_url = "http://127.0.0.1:" + std::to_string(health_port);
    co.max_attempts = 1;
    std::unique_ptr<http::Client> health = std::move(http::Client::Create(co)).value();
    const BenchClock::time_point t0 = BenchClock::now();
    while (true) {
      Result<http::Response> r = health->Get("/readyz");
      if (r.ok() && r->status == 200) break;
      if (Seconds(t0) > 60) Fail("the operator did not become ready: " + operator_->Log());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Let it settle on the Dataflow before the idle figure.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    idle_mib_ = MemoryMiB(operator_->pid()).first;
  }

  // Pods of the pools (the Dataflow's own Pod excluded), and pools whose status is current, from
  // the bench's own informers: polling lists of thousands of objects would load the server and
  // the two cores more than the operator does.
  std::pair<size_t, int> Progress() {
    size_t pods = 0;
    for (const kube::ObjectPtr& p : manager_->pod_cache().store().List()) {
      if (p->value("/metadata/labels/app.kubernetes.io~1component"_json_pointer, "") == "rollout") {
        ++pods;
      }
    }
    int current = 0;
    for (const kube::ObjectPtr& pool : manager_->rollout_pool_cache().store().List()) {
      const json& o = *pool;
      if (o.value("/status/observedGeneration"_json_pointer, int64_t{-1}) ==
              o.value("/metadata/generation"_json_pointer, int64_t{0}) &&
          o.value("/status/replicas"_json_pointer, int64_t{-1}) == flags_.replicas) {
        ++current;
      }
    }
    return {pods, current};
  }

  void Converge() {
    const size_t want_pods = static_cast<size_t>(flags_.pools) * flags_.replicas;
    const double cpu_before = CpuSeconds(operator_->pid());
    const double own_cpu_before = CpuSeconds(::getpid());
    const BenchClock::time_point t0 = BenchClock::now();
    // Four appliers, as `kubectl apply` of many files in parallel would.
    std::atomic<int> next{0};
    std::vector<std::thread> appliers;
    for (int w = 0; w < 4; ++w) {
      appliers.emplace_back([&] {
        for (int i = next++; i < flags_.pools; i = next++) {
          Create({"sluice.dev", "v1alpha1", "rolloutpools", true}, kNs,
                 Pool("pool-" + std::to_string(i), flags_.replicas));
        }
      });
    }
    for (std::thread& t : appliers) t.join();
    const double applied = Seconds(t0);
    double pods_done = 0;
    while (true) {
      const auto [pods, current] = Progress();
      if (pods_done == 0 && pods >= want_pods) pods_done = Seconds(t0);
      if (pods >= want_pods && current == flags_.pools) break;
      if (Seconds(t0) > 900) {
        Fail("no convergence in 900 s: " + std::to_string(pods) + " pods, " +
             std::to_string(current) + " pools current");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double converged = Seconds(t0);
    const double cpu = CpuSeconds(operator_->pid()) - cpu_before;
    const double own_cpu = CpuSeconds(::getpid()) - own_cpu_before;
    const auto [rss, hwm] = MemoryMiB(operator_->pid());
    std::printf("1. converge from apply\n");
    std::printf("  %d pools created in %.2f s (4 client threads)\n", flags_.pools, applied);
    std::printf("  all %zu pods created after %.2f s; every pool's status current after %.2f s\n",
                want_pods, pods_done, converged);
    std::printf("  %.0f pools/s, %.0f pods/s end to end\n", flags_.pools / converged,
                static_cast<double>(want_pods) / converged);
    std::printf(
        "  CPU meanwhile: operator %.1f s (%.0f%% of one core); API server and the "
        "bench's informers (this process) %.1f s (%.0f%%)\n",
        cpu, 100 * cpu / converged, own_cpu, 100 * own_cpu / converged);
    std::printf("2. operator memory (VmRSS)\n");
    std::printf(
        "  idle (caches synced, 1 Dataflow): %.1f MiB; converged: %.1f MiB; peak %.1f "
        "MiB\n",
        idle_mib_, rss, hwm);
    std::printf("  %.1f KiB per pool (%d pods each, their ConfigMaps and the pools cached)\n",
                (rss - idle_mib_) * 1024 / flags_.pools, flags_.replicas);
    PrintReconcileCounts();
    PrintServerRequests();
    operator_->Signal(SIGTERM);
    OperatorPid() = -1;
    if (operator_->Wait(std::chrono::seconds(30)) != 0) {
      Fail("the operator did not exit 0 on SIGTERM: " + operator_->Log());
    }
  }

  // The operator's controller_runtime_reconcile_total for the RolloutPool controller, by result.
  void PrintReconcileCounts() {
    http::ClientOptions co;
    co.base_url = "http://127.0.0.1:" + std::to_string(metrics_port_);
    co.max_attempts = 1;
    std::unique_ptr<http::Client> client = std::move(http::Client::Create(co)).value();
    const http::Response r = Expect(client->Get("/metrics"), 200, "operator /metrics");
    std::istringstream lines(r.body);
    std::string line, counts;
    const std::string prefix = "controller_runtime_reconcile_total{controller=\"rolloutpool\",";
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) != 0) continue;
      const size_t q1 = line.find("result=\"");
      const size_t q2 = line.find('"', q1 + 8);
      const size_t space = line.rfind(' ');
      if (q1 == std::string::npos || q2 == std::string::npos || space == std::string::npos)
        continue;
      counts += (counts.empty() ? "" : ", ") + line.substr(q1 + 8, q2 - q1 - 8) + " " +
                line.substr(space + 1);
    }
    double sum = 0, count = 0;
    std::istringstream again(r.body);
    while (std::getline(again, line)) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos) continue;
      const std::string name = line.substr(0, space);
      if (name == "controller_runtime_reconcile_time_seconds_sum{controller=\"rolloutpool\"}") {
        sum = std::atof(line.c_str() + space + 1);
      }
      if (name == "controller_runtime_reconcile_time_seconds_count{controller=\"rolloutpool\"}") {
        count = std::atof(line.c_str() + space + 1);
      }
    }
    std::printf(
        "  RolloutPool reconciles by result: %s; mean reconcile time %.1f ms (with its "
        "API calls)\n",
        counts.c_str(), count > 0 ? 1000 * sum / count : 0.0);
  }

  // What the API server served while the pools converged (all clients: mostly the operator),
  // the largest counts of sluice_apiserver_requests_total{verb,resource,code}.
  void PrintServerRequests() {
    std::istringstream lines(metrics::ExposeText(server_->metrics()));
    std::vector<std::pair<double, std::string>> counts;
    std::string line;
    const std::string prefix = "sluice_apiserver_requests_total{";
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) != 0) continue;
      const size_t space = line.rfind(' ');
      counts.emplace_back(std::atof(line.c_str() + space + 1),
                          line.substr(prefix.size(), space - prefix.size() - 1));
    }
    std::sort(counts.rbegin(), counts.rend());
    std::string top;
    for (size_t i = 0; i < counts.size() && i < 6; ++i) {
      top += (top.empty() ? "" : "; ") + counts[i].second + ": " +
             std::to_string(static_cast<int64_t>(counts[i].first));
    }
    std::printf("  API server requests, most frequent: %s\n", top.c_str());
  }

  std::string ServerResourceVersion() {
    kube::ListOptions one;
    one.limit = 1;
    Result<kube::ObjectList> l = dynamic_->Resource({"", "v1", "pods", true}, kNs).List(one);
    Check(l.status(), "list");
    return l->resource_version;
  }

  // The operator's caches and reconcilers (operator/manager.h), without its controllers.
  void StartInformers() {
    events_ = std::make_unique<kube::EventRecorder>(*dynamic_);
    op::ManagerOptions options;  // The operator's default images.
    options.namespaces = {kNs};
    manager_ = std::make_unique<op::Manager>(*dynamic_, *events_, options);
    if (!manager_->StartCaches(stop_informers_.Token())) Fail("informer sync");
  }

  void SteadyState() {
    controllers::RolloutPoolController& controller = manager_->rollout_pools();
    const std::vector<std::string> keys = manager_->rollout_pool_cache().store().ListKeys();
    const std::string rv_before = ServerResourceVersion();
    std::vector<double> micros;
    micros.reserve(keys.size() * 3);
    const BenchClock::time_point t0 = BenchClock::now();
    for (int round = 0; round < 3; ++round) {
      for (const std::string& key : keys) {
        const BenchClock::time_point r0 = BenchClock::now();
        Result<controllers::ReconcileResult> r = controller.Reconcile(key);
        micros.push_back(Seconds(r0) * 1e6);
        Check(r.status(), "reconcile " + key);
      }
    }
    const double total = Seconds(t0);
    const std::string rv_after = ServerResourceVersion();
    stop_informers_.Cancel();
    manager_->JoinCaches();
    std::printf(
        "3. steady-state reconcile (RolloutPool controller in process, caches synced, "
        "nothing to change)\n");
    std::printf(
        "  %zu reconciles in %.2f s on 1 thread: p50 %.0f us, p99 %.0f us, max %.0f us "
        "(%.0f reconciles/s)\n",
        micros.size(), total, Percentile(micros, 0.5), Percentile(micros, 0.99),
        Percentile(micros, 1.0), static_cast<double>(micros.size()) / total);
    if (rv_before != rv_after) {
      Fail("the steady-state reconciles wrote to the API server (resourceVersion " + rv_before +
           " -> " + rv_after + "): they are not round-trip free");
    }
    std::printf("  API writes during them: none (resourceVersion stayed %s)\n", rv_after.c_str());
  }

  Flags flags_;
  std::unique_ptr<test_support::InProcessApiServer> server_;
  kube::RestClient* rest_ = nullptr;        // server_'s
  kube::DynamicClient* dynamic_ = nullptr;  // server_'s
  std::unique_ptr<e2e::ChildProcess> operator_;
  double idle_mib_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<op::Manager> manager_;
  CancellationSource stop_informers_;
};

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // Figures appear as they are measured.
  const sluice::bench::BenchClock::time_point t0 = sluice::bench::BenchClock::now();
  sluice::bench::Bench(sluice::bench::ParseFlags(argc, argv)).Run();
  std::printf("total %.1f s\n", sluice::bench::Seconds(t0));
  std::error_code ignored;
  std::filesystem::remove_all(sluice::bench::TempPath(), ignored);
  return 0;
}
