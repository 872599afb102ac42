// RolloutWorker's join (docs/rollout.md, "Weights"): a replica that starts after a version was
// announced loads it before it is Ready and leases its first task. A scripted dataflow on an
// in-process server records what the worker asks (GET /v1/versions, POST /v1/leases); a "trainer"
// (WeightStore + WeightRoutes) serves the weights; a gated sink holds the load so the test can
// look at the worker in the middle of its join.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/rollout/rollout_worker.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_store.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "join-test-token";

// A server with bearer auth on a free loopback port (no /metrics).
std::unique_ptr<http::Server> StartServer(const std::string& name, const log::Logger& logger) {
  http::ServerOptions so;
  so.name = name;
  so.address = "127.0.0.1";
  so.auth = http::TokenSource::FromValue(kToken);
  so.access_log = false;
  so.shutdown_grace = milliseconds(500);
  return std::make_unique<http::Server>(so, nullptr, logger);
}

// Records the versions whose load started and holds every load until Open().
class GatedSink final : public WeightSink {
 public:
  Status ApplyWeights(const std::string&, const weights::WeightSnapshot& s) override {
    std::unique_lock<std::mutex> lock(mu_);
    entered_.push_back(s.version());
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    return Status::Ok();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitEntered(size_t n, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return entered_.size() >= n; });
  }
  std::vector<int64_t> entered() {
    std::lock_guard<std::mutex> lock(mu_);
    return entered_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<int64_t> entered_;
};

// Never called: the scripted dataflow hands out no tasks.
class NoBackend final : public GenerationBackend {
 public:
  Result<std::vector<Completion>> Generate(const GenerateRequest&,
                                           const CancellationToken&) override {
    return Status::Unavailable("no engine in this test");
  }
};

// The dataflow routes a worker uses before and while leasing, scripted.
class ScriptedDataflow {
 public:
  explicit ScriptedDataflow(const log::Logger& logger) : server_(StartServer("dataflow", logger)) {
    server_->Get("/v1/versions", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++version_queries_;
      cv_.notify_all();
      if (unavailable_ > 0) {
        --unavailable_;
        return http::ReplyError(res, Status::Unavailable("recovering its log"));
      }
      http::ReplyJson(res, {{"versions", versions_}});
    });
    server_->Post("/v1/leases", [this](const httplib::Request& req, httplib::Response& res) {
      json versions;
      {
        std::lock_guard<std::mutex> lock(mu_);
        leases_.push_back(json::parse(req.body));
        versions = versions_;
        cv_.notify_all();
      }
      std::this_thread::sleep_for(milliseconds(20));  // A short long poll: an idle worker waits.
      http::ReplyJson(res, {{"tasks", json::array()},
                            {"versions", versions},
                            {"backpressure", false},
                            {"lease_seconds", 60}});
    });
    // Weights URLs of a trainer that is gone (its address now answers 404 to everything),
    // counted.
    server_->Get("/v1/weights/.*", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++gone_fetches_;
      http::ReplyError(res, Status::NotFound("no such weights"));
    });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~ScriptedDataflow() { server_->Shutdown(); }

  // Announces `v` (the reply entries of GET /v1/versions and of leases).
  void Announce(const dataflow::AnnouncedVersion& v) {
    std::lock_guard<std::mutex> lock(mu_);
    versions_.push_back({{"policy", v.policy},
                         {"number", v.number},
                         {"url", v.url},
                         {"digest", v.digest},
                         {"delta_base", v.delta_base}});
  }
  // The next `n` version queries answer 503.
  void FailVersionQueries(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    unavailable_ = n;
  }
  bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, done);
  }
  // Callers of these from a WaitFor predicate already hold mu_.
  size_t leases_locked() const { return leases_.size(); }
  int version_queries_locked() const { return version_queries_; }
  size_t leases() {
    std::lock_guard<std::mutex> lock(mu_);
    return leases_.size();
  }
  int version_queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return version_queries_;
  }
  int gone_fetches() {
    std::lock_guard<std::mutex> lock(mu_);
    return gone_fetches_;
  }
  json lease(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return leases_.at(i);
  }
  std::string url() const { return server_->BaseUrl(); }

 private:
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  json versions_ = json::array();
  int unavailable_ = 0;
  int version_queries_ = 0;
  int gone_fetches_ = 0;
  std::vector<json> leases_;
};

class RolloutWorkerJoinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-join-XXXXXX";
    dir_ = mkdtemp(tmpl);
    trainer_ = StartServer("trainer", logger_);
    routes_ = std::make_unique<weights::WeightRoutes>(store_, nullptr);
    routes_->Register(*trainer_);
    ASSERT_TRUE(trainer_->Start().ok());
    dataflow_ = std::make_unique<ScriptedDataflow>(logger_);
    // Every 503 reaches the worker's own retry.
    client_ = std::make_unique<dataflow::DataflowClient>(std::shared_ptr<http::Client>(
        ::sluice::test_support::TestClient(dataflow_->url(), kToken)));
    WeightUpdaterOptions wo;
    wo.token = http::TokenSource::FromValue(kToken);
    wo.staging_dir = dir_ + "/staging";
    updater_ =
        std::make_unique<WeightUpdater>(std::vector<std::string>{"actor"}, 0, wo, &sink_, nullptr);
    options_.worker_id = "pool-0";
    options_.pool = "pool";
    options_.lease_wait = seconds(0);
    options_.retry_delay = milliseconds(10);
    options_.join_retry_max = milliseconds(50);
  }
  void TearDown() override {
    sink_.Open();  // Never leave a load blocked, or Stop() would wait for it.
    Stop();
    worker_.reset();
    dataflow_.reset();
    trainer_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  // Publishes `version` of the actor on the trainer; its announcement.
  dataflow::AnnouncedVersion Publish(int64_t version) {
    const weights::fixtures::Model model = weights::fixtures::RandomModel(11);
    EXPECT_TRUE(store_.Publish(model.Views(), version, /*encode_delta=*/false).ok());
    dataflow::AnnouncedVersion a;
    a.policy = "actor";
    a.number = version;
    a.url = trainer_->BaseUrl() + "/v1/weights/" + std::to_string(version);
    a.digest = store_.Digest(version).value();
    return a;
  }

  void Start() {
    worker_ = std::make_unique<RolloutWorker>(options_, client_.get(), &backend_,
                                              std::map<std::string, PolicyText>{}, updater_.get(),
                                              EngineGauges{}, nullptr);
    run_ = std::thread([this] { worker_->Run(stop_.Token()); });
  }
  void Stop() {
    stop_.Cancel();
    if (run_.joinable()) run_.join();
  }

  std::string dir_;
  log::Logger logger_{"test"};
  weights::WeightStore store_{2};
  std::unique_ptr<http::Server> trainer_;
  std::unique_ptr<weights::WeightRoutes> routes_;
  std::unique_ptr<ScriptedDataflow> dataflow_;
  std::unique_ptr<dataflow::DataflowClient> client_;
  GatedSink sink_;
  NoBackend backend_;
  std::unique_ptr<WeightUpdater> updater_;
  RolloutWorkerOptions options_;
  std::unique_ptr<RolloutWorker> worker_;
  CancellationSource stop_;
  std::thread run_;
};

TEST_F(RolloutWorkerJoinTest, LoadsTheAnnouncedVersionBeforeItIsReadyAndLeases) {
  dataflow_->Announce(Publish(3));
  Start();
  ASSERT_TRUE(sink_.WaitEntered(1, milliseconds(10000)));
  // Mid-load, and long enough after the start that a worker leasing at once would have leased.
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(worker_->ready());
  EXPECT_FALSE(worker_->Readiness().ok());
  EXPECT_EQ(dataflow_->leases(), 0U);
  json status = worker_->StatusJson();
  EXPECT_FALSE(status["join"]["ready"].get<bool>()) << status.dump();
  EXPECT_EQ(status["join"]["loading"].value("actor", -1), 3) << status.dump();

  sink_.Open();
  ASSERT_TRUE(dataflow_->WaitFor([&] { return dataflow_->leases_locked() >= 1; }, seconds(10)));
  EXPECT_TRUE(worker_->ready());
  EXPECT_TRUE(worker_->Readiness().ok());
  // The first lease already reports version 3 held.
  EXPECT_EQ(dataflow_->lease(0)["hosted_policies"].value("actor", -1), 3)
      << dataflow_->lease(0).dump();
  EXPECT_EQ(sink_.entered(), std::vector<int64_t>{3});  // Loaded once, not again in the background.
  EXPECT_EQ(updater_->Versions().at("actor"), 3);
  status = worker_->StatusJson();
  EXPECT_TRUE(status["join"]["ready"].get<bool>());
  EXPECT_EQ(status["join"]["versions"].value("actor", -1), 3) << status.dump();
}

TEST_F(RolloutWorkerJoinTest, NothingAnnouncedIsReadyAtOnceWithTheInitialWeights) {
  sink_.Open();
  Start();
  ASSERT_TRUE(dataflow_->WaitFor([&] { return dataflow_->leases_locked() >= 1; }, seconds(10)));
  EXPECT_TRUE(worker_->ready());
  EXPECT_GE(dataflow_->version_queries(), 1);  // It did ask.
  EXPECT_EQ(dataflow_->lease(0)["hosted_policies"].value("actor", -1), 0);
  EXPECT_TRUE(sink_.entered().empty());
  const json status = worker_->StatusJson();
  EXPECT_EQ(status["join"]["versions"].value("actor", -1), 0) << status.dump();
  EXPECT_EQ(status["join"]["error"], "");
}

TEST_F(RolloutWorkerJoinTest, RetriesWhileTheDataflowIsUnavailable) {
  dataflow_->Announce(Publish(3));
  dataflow_->FailVersionQueries(3);
  sink_.Open();
  Start();
  ASSERT_TRUE(dataflow_->WaitFor([&] { return dataflow_->leases_locked() >= 1; }, seconds(10)));
  EXPECT_EQ(dataflow_->version_queries(), 4);
  EXPECT_EQ(dataflow_->lease(0)["hosted_policies"].value("actor", -1), 3);
  EXPECT_EQ(worker_->StatusJson()["join"]["error"], "");
}

TEST_F(RolloutWorkerJoinTest, StopEndsTheJoinPromptlyWithoutLeasing) {
  options_.retry_delay = seconds(30);  // The wait after the first failure is 15-30 s.
  options_.join_retry_max = seconds(60);
  dataflow_->FailVersionQueries(1000);
  Start();
  ASSERT_TRUE(
      dataflow_->WaitFor([&] { return dataflow_->version_queries_locked() >= 1; }, seconds(10)));
  // The failure is recorded before the backoff wait starts.
  for (int i = 0; i < 500 && worker_->StatusJson()["join"]["error"] == ""; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const Status readiness = worker_->Readiness();
  EXPECT_NE(readiness.message().find("recovering its log"), std::string::npos)
      << readiness.ToString();
  const auto t0 = std::chrono::steady_clock::now();
  Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(5));
  EXPECT_FALSE(worker_->ready());
  EXPECT_EQ(dataflow_->leases(), 0U);
  EXPECT_EQ(dataflow_->version_queries(), 1);
}

// A version announced after the join whose weights cannot be fetched (its trainer is gone) is
// retried with backoff, not on every lease reply; a newer announcement is fetched at once.
TEST_F(RolloutWorkerJoinTest, AFailingUpdateIsRetriedWithBackoffAndANewerVersionAtOnce) {
  options_.retry_delay = milliseconds(20);  // Lease replies come every ~40 ms (20 ms poll + wait).
  options_.join_retry_max = seconds(10);
  dataflow_->Announce(Publish(3));
  sink_.Open();
  Start();
  ASSERT_TRUE(dataflow_->WaitFor([&] { return dataflow_->leases_locked() >= 1; }, seconds(10)));
  dataflow::AnnouncedVersion gone = Publish(4);
  gone.url = dataflow_->url() + "/v1/weights/4";
  dataflow_->Announce(gone);
  // Two seconds hold about 50 lease replies; with backoff (20, 40, 80, ... ms) the version is
  // tried about 7 times.
  std::this_thread::sleep_for(seconds(2));
  const int tried = dataflow_->gone_fetches();
  EXPECT_GE(tried, 3);
  EXPECT_LE(tried, 10);
  EXPECT_EQ(updater_->Versions().at("actor"), 3);
  // A newer version is loaded at once, although version 4 is still backing off.
  dataflow_->Announce(Publish(5));
  for (int i = 0; i < 200 && updater_->Versions().at("actor") != 5; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(updater_->Versions().at("actor"), 5);
}

}  // namespace
}  // namespace sluice::rollout
