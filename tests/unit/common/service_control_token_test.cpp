// Service::AdmitControlToken (common/service/service_main.h) through a real server: with
// --control-token-file the control token admits every route and --token-file's token only its
// peer scope (403 elsewhere); without the flag the options are left as they were.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/config/parse.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/metrics/registry.h"
#include "common/service/service_main.h"
#include "tests/support/temp_dir.h"

namespace sluice::service {
namespace {

constexpr char kPeerToken[] = "peer-token-0123";
constexpr char kControlToken[] = "control-token-4567";

class ServiceControlTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServingDefaults defaults;
    defaults.control_token_help = "The controller's token.";
    AddServingOptions(definition_.spec, defaults);
    dir_.Write("token", std::string(kPeerToken) + "\n");
    dir_.Write("control-token", std::string(kControlToken) + "\n");
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // Parses `flags` (plus --address and --port), builds the Service with --token-file's token as
  // RunService would, calls AdmitControlToken and starts a server with two routes.
  Status Start(std::vector<std::string> flags) {
    flags.push_back("--address=127.0.0.1");
    flags.push_back("--port=0");
    Result<config::Config> cfg = config::Parse(definition_.spec, flags, {});
    if (!cfg.ok()) return cfg.status();
    config_ = std::make_unique<config::Config>(std::move(*cfg));
    std::shared_ptr<http::TokenSource> token;
    if (const std::string& file = config_->GetString("token-file"); !file.empty()) {
      token = http::TokenSource::FromFile(file).value();
    }
    Service svc{definition_, *config_, logger_, CancellationSource(), registry_, token};
    http::ServerOptions options = svc.ServerOptions();
    options.access_log = false;
    options.shutdown_grace = std::chrono::milliseconds(200);
    SLUICE_RETURN_IF_ERROR(svc.AdmitControlToken(options, {{"GET", "/v1/relay/[^/]+/weights"}}));
    server_ = std::make_unique<http::Server>(std::move(options), nullptr, logger_);
    server_->Get(R"(/v1/relay/[^/]+/weights)", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyJson(res, {{"versions", nlohmann::json::array()}});
    });
    server_->Post("/v1/drain", [](const httplib::Request&, httplib::Response& res) {
      http::ReplyJson(res, {{"draining", true}});
    });
    return server_->Start();
  }

  // The status `token` gets for `method` `path` (0 when the call fails).
  int Call(const std::string& token, const std::string& method, const std::string& path) {
    http::ClientOptions options;
    options.base_url = server_->BaseUrl();
    options.max_attempts = 1;
    if (!token.empty()) options.token = http::TokenSource::FromValue(token);
    http::Request req;
    req.method = method;
    req.path = path;
    if (method == "POST") {
      req.body = "{}";
      req.content_type = "application/json";
    }
    Result<http::Response> r = std::move(http::Client::Create(options)).value()->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->status : 0;
  }

  ServiceDefinition definition_{"sluice-test", "test", "A test service.",
                                config::Spec("SLUICE_TEST")};
  test_support::TempDir dir_{"service_control_token_test"};
  log::Logger logger_{"service-control-token-test"};
  metrics::Registry registry_;
  std::unique_ptr<config::Config> config_;
  std::unique_ptr<http::Server> server_;
};

TEST_F(ServiceControlTokenTest, TheControlTokenAdmitsEveryRouteAndThePeersTokenOnlyItsScope) {
  ASSERT_TRUE(Start({"--token-file=" + dir_.File("token"),
                     "--control-token-file=" + dir_.File("control-token")})
                  .ok());
  EXPECT_EQ(Call(kControlToken, "POST", "/v1/drain"), 200);
  EXPECT_EQ(Call(kControlToken, "GET", "/v1/relay/actor/weights"), 200);
  EXPECT_EQ(Call(kPeerToken, "GET", "/v1/relay/actor/weights"), 200);
  EXPECT_EQ(Call(kPeerToken, "POST", "/v1/drain"), 403);
  EXPECT_EQ(Call("", "GET", "/v1/relay/actor/weights"), 401);
  EXPECT_EQ(Call("another-token", "POST", "/v1/drain"), 401);
}

TEST_F(ServiceControlTokenTest, WithoutTheFlagTheTokenAdmitsEveryRoute) {
  ASSERT_TRUE(Start({"--token-file=" + dir_.File("token")}).ok());
  EXPECT_EQ(Call(kPeerToken, "POST", "/v1/drain"), 200);
  EXPECT_EQ(Call(kControlToken, "POST", "/v1/drain"), 401);
}

TEST_F(ServiceControlTokenTest, OnlyAControlTokenMeansOnlyItIsAdmitted) {
  ASSERT_TRUE(Start({"--control-token-file=" + dir_.File("control-token")}).ok());
  EXPECT_EQ(Call(kControlToken, "POST", "/v1/drain"), 200);
  EXPECT_EQ(Call(kPeerToken, "GET", "/v1/relay/actor/weights"), 401);
}

TEST_F(ServiceControlTokenTest, AnUnreadableControlTokenFileNamesTheFlag) {
  const Status s =
      Start({"--token-file=" + dir_.File("token"), "--control-token-file=" + dir_.File("missing")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "--control-token-file");
}

}  // namespace
}  // namespace sluice::service
