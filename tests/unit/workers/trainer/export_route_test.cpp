// ExportRoute over real HTTP (an in-process server with bearer auth): the statuses of every
// branch (400, 404 naming the held versions, 409 without an export root, 503 before the model
// is loaded, 401 without the token) and a 200 that writes <root>/<policy>-v<version>.
#include "workers/trainer/export_route.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "common/metrics/registry.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/weights/weight_fixtures.h"

namespace sluice::trainer {
namespace {

using nlohmann::json;
constexpr char kToken[] = "export-route-token";

class ExportRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-export-route-XXXXXX";
    root_ = mkdtemp(tmpl);
    ASSERT_TRUE(store_.Publish(weights_.Views(), 4).ok());
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    std::filesystem::remove_all(root_);
  }

  // Serves an ExportRoute with export root `root` (empty: none configured).
  void Serve(const std::string& root) {
    route_ =
        std::make_unique<ExportRoute>(store_, root, "actor", std::vector<std::string>{}, logger_);
    http::ServerOptions so;
    so.name = "export-test";
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = false;
    so.shutdown_grace = std::chrono::milliseconds(1000);
    server_ = std::make_unique<http::Server>(so, &registry_, logger_);
    route_->Register(*server_);
    ASSERT_TRUE(server_->Start().ok());
  }

  http::Response Post(const std::string& path, const std::string& token = kToken) {
    std::unique_ptr<http::Client> client =
        ::sluice::test_support::TestClient(server_->BaseUrl(), token);
    http::Request req;
    req.method = "POST";
    req.path = path;
    Result<http::Response> r = client->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : http::Response{};
  }

  std::string root_;
  metrics::Registry registry_;
  log::Logger logger_{"export-route-test"};
  weights::WeightStore store_{2};
  weights::fixtures::Model weights_ =
      weights::fixtures::TinyWeights(model::DType::kF32, /*seed=*/3);
  std::unique_ptr<ExportRoute> route_;
  std::unique_ptr<http::Server> server_;
};

TEST_F(ExportRouteTest, ExportsAHeldVersionUnderThePolicysName) {
  Serve(root_);
  EXPECT_EQ(Post("/v1/weights/4/export").status, 503);  // No model config yet.
  route_->SetModelConfig(weights::fixtures::TinyConfig());
  const http::Response r = Post("/v1/weights/4/export");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["version"], 4);
  EXPECT_EQ(body["path"], root_ + "/actor-v4");
  EXPECT_EQ(body["created"], true);
  EXPECT_EQ(body["digest"], store_.Digest(4).value());
  EXPECT_TRUE(std::filesystem::exists(root_ + "/actor-v4/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(root_ + "/actor-v4/config.json"));
  // Again: the same directory, not rewritten.
  const http::Response again = Post("/v1/weights/4/export");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(json::parse(again.body)["created"], false);
}

TEST_F(ExportRouteTest, RejectsBadVersionsAndUnknownOnesNamingTheHeld) {
  Serve(root_);
  route_->SetModelConfig(weights::fixtures::TinyConfig());
  const http::Response missing = Post("/v1/weights/3/export");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("held: [4]"), std::string::npos) << missing.body;
  for (const char* bad : {"v4", "-1", "4x", "99999999999999999999"}) {
    const http::Response r = Post(std::string("/v1/weights/") + bad + "/export");
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("version"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Post("/v1/weights/4/export", "").status, 401);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/actor-v4"));
}

TEST_F(ExportRouteTest, WithoutAnExportRootEveryRequestIsAConflict) {
  Serve("");
  route_->SetModelConfig(weights::fixtures::TinyConfig());
  const http::Response r = Post("/v1/weights/4/export");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("--export-dir"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace sluice::trainer
