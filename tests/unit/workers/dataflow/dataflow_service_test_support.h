// What the DataflowService tests (dataflow_service*_test.cpp) share: a base configuration,
// group frames for leased tasks, and the DataflowServiceTest fixture (an in-process server on a
// free port, the real client, a real write-ahead log in a temporary directory, a FakeClock).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_service.h"

namespace sluice::dataflow::service_test_support {

using fixtures::Duo;
using fixtures::Single;

using nlohmann::json;
using std::chrono::seconds;

constexpr char kToken[] = "service-test-token";
constexpr size_t kMaxBody = 1 << 20;

using fixtures::MakeDataset;

inline DataflowConfig BaseConfig() {
  DataflowConfig c;
  c.policies = {"actor"};
  c.group_size = 4;
  c.lease_duration = seconds(60);
  c.max_attempts = 3;
  c.capacity_groups = 8;
  c.groups_per_batch = 2;
  c.ack_timeout = seconds(100);
  c.shuffle = false;
  c.sampling = {{"temperature", 1.0}};
  c.workflow = {{"type", "single-turn"}};
  return c;
}

// A group for a task of a lease reply, with rewards 0, 1, 0, 1.
inline std::string GroupFor(const json& task, std::vector<Sample> samples = {}) {
  TrajectoryGroup g;
  g.task_id = task["task_id"].get<std::string>();
  g.attempt = task["attempt"].get<uint32_t>();
  g.lease_id = task["lease_id"].get<std::string>();
  g.worker_id = "w";
  g.prompt_id = task["prompt_id"].get<std::string>();
  g.samples = samples.empty() ? std::vector<Sample>{Single(0), Single(1), Single(0), Single(1)}
                              : std::move(samples);
  std::string out;
  EXPECT_TRUE(EncodeTrajectoryGroup(g, &out).ok());
  return out;
}

class DataflowServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-dataflow-service-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    StopService();
    std::filesystem::remove_all(dir_);
  }

  void StartService(DataflowConfig config = BaseConfig(), bool snapshot_on_stop = true) {
    registry_ = std::make_unique<metrics::Registry>();
    http::ServerOptions so;
    so.name = "dataflow-test";
    so.port = 0;
    so.max_body_bytes = kMaxBody;
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = false;
    so.shutdown_grace = std::chrono::milliseconds(2000);
    so.worker_threads = worker_threads_;
    server_ = std::make_unique<http::Server>(so, registry_.get(), logger_);
    DataflowServiceOptions opts;
    opts.wal.dir = dir_ + "/wal";
    opts.wal.fsync = true;
    opts.maintenance_interval = std::chrono::milliseconds(20);
    opts.max_wait = std::chrono::milliseconds(5000);
    opts.snapshot_on_stop = snapshot_on_stop;
    opts.groups_per_batch_by_policy = groups_per_batch_by_policy_;
    opts.max_waiting_leases = max_waiting_leases_;
    service_ = std::make_unique<DataflowService>(opts, std::move(config), &dataset_, &clock_,
                                                 registry_.get(), logger_);
    service_->Register(*server_);
    ASSERT_TRUE(server_->Start().ok());
    sluice::Status recovered = service_->Recover();
    ASSERT_TRUE(recovered.ok()) << recovered.ToString();
    client_ = MakeClient(kToken);
  }

  void StopService() {
    client_.reset();
    if (server_) server_->Shutdown();
    if (service_) {
      EXPECT_TRUE(service_->Stop().ok());
    }
    service_.reset();
    server_.reset();
    registry_.reset();
  }

  std::unique_ptr<http::Client> MakeClient(const std::string& token) {
    return ::sluice::test_support::TestClient(server_->BaseUrl(), token);
  }

  http::Response Must(Result<http::Response> r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : http::Response{};
  }

  http::Response PostJson(const std::string& path, const json& body) {
    return Must(client_->Post(path, body.dump(), "application/json"));
  }

  json Lease(const std::string& worker, int64_t capacity, double wait = 0,
             http::Client* client = nullptr) {
    json req = {{"worker_id", worker},
                {"pool", "pool"},
                {"region", "eu"},
                {"capacity", capacity},
                {"wait", wait}};
    http::Client* c = client ? client : client_.get();
    http::Response r = Must(c->Post("/v1/leases", req.dump(), "application/json"));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json::object();
  }

  json LeaseOne(const std::string& worker = "w1") {
    json reply = Lease(worker, 1);
    EXPECT_EQ(reply["tasks"].size(), 1U) << reply.dump();
    return reply["tasks"].empty() ? json::object() : reply["tasks"][0];
  }

  http::Response Submit(const std::string& body) {
    return Must(client_->Post("/v1/trajectories", body, "application/octet-stream"));
  }

  json SubmitOk(const std::string& body) {
    http::Response r = Submit(body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json::object();
  }

  http::Response GetBatch(const std::string& policy, int64_t groups = 0, double wait = 0) {
    return Must(client_->Get("/v1/batches/" + policy + "?groups=" + std::to_string(groups) +
                             "&wait=" + std::to_string(wait)));
  }

  Batch TakeBatchOk(const std::string& policy, int64_t groups = 0) {
    http::Response r = GetBatch(policy, groups);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Header("Content-Type"), "application/octet-stream");
    Result<Batch> b = DecodeBatch(r.body);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return Batch{};
    EXPECT_EQ(r.Header("X-Sluice-Batch-Id"), b->batch_id);
    return std::move(b).value();
  }

  int Ack(const std::string& batch_id) {
    return PostJson("/v1/batches/" + batch_id + "/ack", json::object()).status;
  }

  json Status() {
    http::Response r = Must(client_->Get("/v1/status"));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body);
  }

  // The core's part of the status (what recovery must reproduce).
  json CoreStatus() {
    json s = Status();
    for (const char* k : {"wal", "recovery", "trainer_wait", "ready"}) s.erase(k);
    return s;
  }

  std::string Metrics() { return Must(client_->Get("/metrics")).body; }

  // Waits (up to 3 s, less than the long polls' 5 s) until a request is in its handler: a long
  // poll started on another thread is waiting before the test changes what it waits for.
  void WaitForRequestInFlight() {
    const auto deadline = std::chrono::steady_clock::now() + seconds(3);
    while (server_->in_flight() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Polls `fresh` (up to 10 s) until the metrics show what the test wrote: the status they
  // read is cached for a moment (DataflowService's status cache). The assertions that follow
  // report a timeout.
  static void WaitForScrape(const std::function<bool()>& fresh) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!fresh() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  FakeClock clock_;
  Dataset dataset_ = MakeDataset(50);
  log::Logger logger_{"dataflow-test"};
  std::string dir_;
  std::map<std::string, int64_t> groups_per_batch_by_policy_;
  size_t worker_threads_ = 8;      // The server's.
  size_t max_waiting_leases_ = 6;  // DataflowServiceOptions::max_waiting_leases.
  std::unique_ptr<metrics::Registry> registry_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<DataflowService> service_;
  std::unique_ptr<http::Client> client_;
};

}  // namespace sluice::dataflow::service_test_support
