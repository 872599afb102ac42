// WorkerHost's routes while the policies load (no worker yet): status says loading, drain and
// readiness wait, and malformed drain and relay requests get 400s naming the field.
#include "workers/rollout/worker_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"

namespace sluice::rollout {
namespace worker_host_test {

class NullSink final : public WeightSink {
 public:
  Status ApplyWeights(const std::string&, const weights::WeightSnapshot&) override {
    return Status::Ok();
  }
};

class WorkerHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    staging_ = std::filesystem::temp_directory_path() /
               ("sluice-worker-host-" + std::to_string(::getpid()));
    WeightUpdaterOptions o;
    o.staging_dir = staging_.string();
    updater_ =
        std::make_unique<WeightUpdater>(std::vector<std::string>{"actor"}, 0, o, &sink_, nullptr);
    host_ = std::make_unique<WorkerHost>(updater_.get(), std::chrono::seconds(7), &logger_);
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, &registry_, logger_);
    host_->Register(*server_);
    ASSERT_TRUE(server_->Start().ok());
    http::ClientOptions c;
    c.base_url = server_->BaseUrl();
    c.max_attempts = 1;
    client_ = http::Client::Create(c).value();
  }
  void TearDown() override {
    client_.reset();  // Its idle connection would hold the server's shutdown for the keep-alive.
    server_->Shutdown();
    std::filesystem::remove_all(staging_);
  }
  http::Response Post(const std::string& path, const std::string& body) {
    Result<http::Response> r = client_->Post(path, body, "application/json");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  std::filesystem::path staging_;
  log::Logger logger_{"test"};
  metrics::Registry registry_;
  NullSink sink_;
  std::unique_ptr<WeightUpdater> updater_;
  std::unique_ptr<WorkerHost> host_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(WorkerHostTest, WhileLoadingTheStatusSaysSoAndDrainAndReadinessWait) {
  Result<http::Response> status = client_->Get("/v1/status");
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(nlohmann::json::parse(status->body).value("loading", false), true) << status->body;
  EXPECT_EQ(Post("/v1/drain", "").status, 503);
  Result<http::Response> ready = client_->Get("/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status().ToString();
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("loading the policies"), std::string::npos) << ready->body;
}

TEST_F(WorkerHostTest, DrainGraceMustBeAWholeNumberOfSeconds) {
  for (const char* grace : {"abc", "5s", "-1", ""}) {
    const http::Response r = Post(std::string("/v1/drain?grace=") + grace, "");
    EXPECT_EQ(r.status, 400) << grace;
    EXPECT_NE(r.body.find("grace"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Post("/v1/drain?grace=5", "").status, 503);  // Well-formed: waits for the worker.
}

TEST_F(WorkerHostTest, TheRelayIsAnHttpUrlOrNothingAndAnythingElseNamesTheField) {
  EXPECT_EQ(Post("/v1/relay", R"({"url": "http://10.1.2.3:8080"})").status, 200);
  EXPECT_EQ(updater_->relay(), "http://10.1.2.3:8080");
  for (const char* body : {R"({"url": "ftp://x"})", R"({"url": 5})", R"({})", "not json"}) {
    const http::Response r = Post("/v1/relay", body);
    EXPECT_EQ(r.status, 400) << body;
    if (std::string(body) != "not json") {
      EXPECT_NE(r.body.find("url"), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(updater_->relay(), "http://10.1.2.3:8080");  // Unchanged by the refusals.
  EXPECT_EQ(Post("/v1/relay", R"({"url": ""})").status, 200);
  EXPECT_EQ(updater_->relay(), "");
}

}  // namespace worker_host_test
}  // namespace sluice::rollout
