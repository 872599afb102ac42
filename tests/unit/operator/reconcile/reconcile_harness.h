// What the reconcile tests share: the operator's Manager (caches and reconcilers, no controller
// threads) against an in-process local API server with Sluice's CRDs, a FakeClock for the
// reconcilers' time, and fake rollout workers. The tier between the pure plans' table tests and
// the e2e tests: a test calls Reconcile itself and looks at what it wrote, without processes.
//
// Pods never run here (no node agent): a test makes a Pod Ready by patching its status, with a
// podIP where a FakeWorker listens on the worker port. The namespace's CA (Secret sluice-ca) is
// made here, so that fake workers can serve HTTPS with a certificate the operator verifies
// (WorkerCertificate).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/process/cancellation.h"
#include "common/tls/certificates.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "localcluster/cli/crd_install.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/manager.h"
#include "tests/support/in_process_api_server.h"
#include "tests/support/temp_dir.h"

namespace sluice::op::reconcile_testing {

using nlohmann::json;

inline constexpr char kNs[] = "reconcile";
inline constexpr char kToken[] = "reconcile-test-token";
inline const kube::GroupVersionResource kPodsGvr{"", "v1", "pods", true};
inline const kube::GroupVersionResource kEventsGvr{"", "v1", "events", true};
inline const kube::GroupVersionResource kPoolsGvr{"sluice.dev", "v1alpha1", "rolloutpools", true};
inline const kube::GroupVersionResource kJobsGvr{"sluice.dev", "v1alpha1", "trainerjobs", true};

// A rollout worker's HTTPS surface as the RolloutPool reconciler uses it, on <ip>:8080, serving
// `serving` (ReconcileTest::WorkerCertificate).
class FakeWorker {
 public:
  FakeWorker(const std::string& ip, const tls::CertifiedKey& serving) : ip_(ip) {
    std::ofstream(dir_.File("tls.crt")) << serving.cert_pem;
    std::ofstream(dir_.File("tls.key")) << serving.key_pem;
    http::ServerOptions options;
    options.tls = http::ServerTlsOptions{dir_.File("tls.crt"), dir_.File("tls.key"), ""};
    options.name = "fake-worker";
    options.address = ip;
    options.port = 8080;
    options.access_log = false;
    options.shutdown_grace = std::chrono::milliseconds(200);
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);
    server_->Get("/v1/status", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!Admitted(req, res)) return;
      res.set_content(json{{"in_flight", in_flight_},
                           {"draining", draining_},
                           {"drained", drained_},
                           {"weights", {{"relay", relay_}}}}
                          .dump(),
                      "application/json");
    });
    server_->Post("/v1/drain", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!Admitted(req, res)) return;
      draining_ = true;
      ++drain_requests_;
      res.set_content("{}", "application/json");
    });
    server_->Post("/v1/relay", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!Admitted(req, res)) return;
      relay_ = json::parse(req.body, nullptr, false).value("url", "");
      res.set_content("{}", "application/json");
    });
    started_ = server_->Start();
  }
  ~FakeWorker() { server_->Shutdown(); }

  const Status& started() const { return started_; }
  const std::string& ip() const { return ip_; }
  void SetInFlight(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = n;
  }
  void SetDrained() {
    std::lock_guard<std::mutex> lock(mu_);
    drained_ = true;
  }
  int drain_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return drain_requests_;
  }
  // From now on the worker answers 401 to a request without `Bearer <token>`.
  void RequireToken(const std::string& token) {
    std::lock_guard<std::mutex> lock(mu_);
    required_token_ = token;
  }
  int refused() const {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }

 private:
  std::string ip_;
  test_support::TempDir dir_;
  log::Logger logger_{"fake-worker", SystemClock::Instance(), [](std::string_view) {}};
  std::unique_ptr<http::Server> server_;
  Status started_;
  mutable std::mutex mu_;
  int64_t in_flight_ = 0;
  bool draining_ = false;
  bool drained_ = false;
  // Like the worker with --control-token-file: once RequireToken was called, only that token.
  // Called with mu_ held.
  bool Admitted(const httplib::Request& req, httplib::Response& res) {
    if (required_token_.empty() ||
        req.get_header_value("Authorization") == "Bearer " + required_token_) {
      return true;
    }
    ++refused_;
    res.status = 401;
    return false;
  }

  std::string relay_;
  int drain_requests_ = 0;
  std::string required_token_;
  int refused_ = 0;
};

// A loopback address of its own for each fake worker of this process (127.0.0.0/8 is all
// loopback on Linux), so parallel test processes do not share a worker port.
inline std::string FreshLoopbackIp() {
  static std::atomic<int> next{1};
  const int n = next++;
  const int pid = static_cast<int>(::getpid());
  return "127." + std::to_string(100 + pid % 100) + "." + std::to_string((pid / 100) % 250 + 1) +
         "." + std::to_string(n % 250 + 1);
}

class ReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The reconcilers compare their clock with the API server's timestamps (creation, deletion):
    // start it at the real time, so that only Advance moves them apart.
    clock_.Advance(std::chrono::system_clock::now() - clock_.WallNow());
    test_support::InProcessApiServerOptions options;
    options.token = kToken;
    Result<std::unique_ptr<test_support::InProcessApiServer>> server =
        test_support::InProcessApiServer::Create(options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    rest_ = &server_->rest();
    dynamic_ = &server_->dynamic();
    const std::vector<json> crds = cli::EmbeddedCrds();
    ASSERT_TRUE(cli::InstallCrds(*rest_, crds).ok());
    std::vector<std::string> names;
    for (const json& c : crds) names.push_back(c["metadata"]["name"].get<std::string>());
    ASSERT_TRUE(cli::WaitCrdsEstablished(*rest_, names, std::chrono::seconds(30)).ok());
    Create({"", "v1", "namespaces", false},
           {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}});
    Create({"sluice.dev", "v1alpha1", "policies", true}, json::parse(R"({
      "apiVersion": "sluice.dev/v1alpha1", "kind": "Policy", "metadata": {"name": "tiny"},
      "spec": {"model": {"source": {"builtin": {}}}}})"));
    Create({"sluice.dev", "v1alpha1", "dataflows", true}, json::parse(R"({
      "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow", "metadata": {"name": "arith"},
      "spec": {
        "dataset": {"builtin": {"generator": "arithmetic", "count": 100}},
        "workflow": {"type": "single-turn", "roles": [{"name": "policy", "policy": "tiny"}]},
        "reward": {"type": "exact-match"},
        "storage": {"size": "64Mi"}}})"));
    Result<tls::CertifiedKey> ca = tls::NewCertificateAuthority(
        {"sluice-ca.reconcile", clock_.WallNow(), std::chrono::hours(24 * 3650)});
    ASSERT_TRUE(ca.ok()) << ca.status().message();
    ca_ = *ca;
    Create({"", "v1", "secrets", true}, controllers::DesiredNamespaceCaSecret(kNs, ca_));
    events_ = std::make_unique<kube::EventRecorder>(*dynamic_);
    ManagerOptions manager;
    manager.namespaces = {kNs};
    manager.clock = &clock_;
    manager_ = std::make_unique<Manager>(*dynamic_, *events_, manager);
    ASSERT_TRUE(manager_->StartCaches(stop_.Token()));
  }

  void TearDown() override {
    stop_.Cancel();
    if (manager_) manager_->JoinCaches();
    manager_.reset();
    events_.reset();
    server_.reset();
  }

  // A serving certificate from the namespace's CA for `host` (a pool's RolloutServerName).
  tls::CertifiedKey WorkerCertificate(const std::string& host) {
    Result<tls::CertifiedKey> serving = tls::IssueServingCertificate(
        ca_, {host, clock_.WallNow(), std::chrono::hours(24 * 365)}, {host});
    EXPECT_TRUE(serving.ok()) << serving.status().message();
    return serving.ok() ? *serving : tls::CertifiedKey{};
  }

  kube::ResourceClient Client(const kube::GroupVersionResource& gvr) {
    return dynamic_->Resource(gvr, gvr.namespaced ? kNs : "");
  }

  json Create(const kube::GroupVersionResource& gvr, json object) {
    if (gvr.namespaced) object["metadata"]["namespace"] = kNs;
    Result<json> r = Client(gvr).Create(object);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : json();
  }

  json Get(const kube::GroupVersionResource& gvr, const std::string& name) {
    Result<json> r = Client(gvr).Get(name);
    return r.ok() ? *r : json();
  }

  std::vector<json> List(const kube::GroupVersionResource& gvr) {
    Result<kube::ObjectList> l = Client(gvr).List({});
    EXPECT_TRUE(l.ok()) << l.status().message();
    std::vector<json> items;
    if (l.ok()) {
      for (const auto& item : l->items) items.push_back(*item);
    }
    return items;
  }

  // The reasons of the Events about `name`, oldest first.
  std::vector<std::string> EventReasons(const std::string& name) {
    std::vector<std::string> reasons;
    for (const json& e : List(kEventsGvr)) {
      if (e.value("/involvedObject/name"_json_pointer, "") == name) {
        reasons.push_back(e.value("reason", ""));
      }
    }
    return reasons;
  }

  // Patches a Pod's status (what the node agent would report).
  void PatchPodStatus(const std::string& pod, const json& status) {
    Result<json> r = Client(kPodsGvr).Patch(pod, kube::PatchType::kMerge,
                                            json{{"status", status}}.dump(), {}, "status");
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  // Waits until the object in `cache` at key <ns>/<name> is the one the API server holds now
  // (same resourceVersion, or absent from both): Reconcile reads the caches.
  bool WaitCached(kube::Informer& cache, const kube::GroupVersionResource& gvr,
                  const std::string& name) {
    const json live = Get(gvr, name);
    const std::string rv = live.is_object() ? live["metadata"].value("resourceVersion", "") : "";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      kube::ObjectPtr cached = cache.store().Get(std::string(kNs) + "/" + name);
      const std::string have =
          cached ? cached->value("/metadata/resourceVersion"_json_pointer, "") : "";
      if (have == rv) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // Waits until the pod cache holds every Pod the API server lists, as it lists them.
  bool WaitPodsCached() {
    for (const json& p : List(kPodsGvr)) {
      if (!WaitCached(manager_->pod_cache(), kPodsGvr, p["metadata"]["name"])) return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (manager_->pod_cache().store().List().size() == List(kPodsGvr).size()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  FakeClock clock_;
  tls::CertifiedKey ca_;  // The namespace's CA, in Secret sluice-ca.
  std::unique_ptr<test_support::InProcessApiServer> server_;
  kube::RestClient* rest_ = nullptr;        // server_'s
  kube::DynamicClient* dynamic_ = nullptr;  // server_'s
  std::unique_ptr<kube::EventRecorder> events_;
  CancellationSource stop_;
  std::unique_ptr<Manager> manager_;
};

}  // namespace sluice::op::reconcile_testing
