// Server's hook for credentials of a component's own (ServerOptions::authenticate_other, what the
// API server's service-account tokens go through) and the access log fields handlers add
// (Server::AddAccessLogField).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/metrics/exposition.h"

namespace sluice::http {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kMainToken[] = "main-token-0123456789";
constexpr char kOtherToken[] = "component-token";

class AuthHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.auth = TokenSource::FromValue(kMainToken);
    options.shutdown_grace = milliseconds(200);
    options.authenticate_other = [this](const httplib::Request& req, httplib::Response& res) {
      ++hook_calls_;
      if (req.get_header_value("Authorization") == std::string("Bearer ") + kOtherToken) {
        Server::AddAccessLogField("user", "component-user");
        return true;
      }
      Server::AddAccessLogField("auth_error", "unknown credentials");
      res.status = 401;
      res.set_content(R"({"custom":"refusal"})", "application/json");
      return false;
    };
    server_ = std::make_unique<Server>(std::move(options), &registry_, logger_);
    server_->Post("/v1/echo", [](const httplib::Request& req, httplib::Response& res) {
      Server::AddAccessLogField("handler", "echo");
      ReplyJson(res, {{"body", req.body}});
    });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Shutdown(); }

  Result<Response> Echo(const std::string& token) {
    ClientOptions options;
    options.base_url = server_->BaseUrl();
    options.max_attempts = 1;
    if (!token.empty()) options.token = TokenSource::FromValue(token);
    Result<std::unique_ptr<Client>> client = Client::Create(options);
    if (!client.ok()) return client.status();
    return (*client)->Post("/v1/echo", "hello", "text/plain");
  }

  // The access log line of the request with `status`, waiting for it (logs follow the reply).
  json LogLine(int status) {
    for (int i = 0; i < 250; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = lines_.rbegin(); it != lines_.rend(); ++it) {
          json line = json::parse(*it, nullptr, false);
          if (line.value("msg", "") == "request" && line.value("status", 0) == status) {
            return line;
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return json();
  }

  metrics::Registry registry_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  log::Logger logger_{"test", SystemClock::Instance(), [this](std::string_view line) {
                        std::lock_guard<std::mutex> lock(mu_);
                        lines_.emplace_back(line);
                      }};
  std::atomic<int> hook_calls_{0};
  std::unique_ptr<Server> server_;
};

TEST_F(AuthHookTest, TheMainTokenSkipsTheHook) {
  Result<Response> r = Echo(kMainToken);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(hook_calls_.load(), 0);
  const json line = LogLine(200);
  EXPECT_EQ(line.value("handler", ""), "echo");
  EXPECT_FALSE(line.contains("user"));
}

TEST_F(AuthHookTest, TheHookAdmitsItsOwnCredentialsAndTheirFieldsAreLogged) {
  Result<Response> r = Echo(kOtherToken);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["body"], "hello");
  EXPECT_EQ(hook_calls_.load(), 1);
  const json line = LogLine(200);
  EXPECT_EQ(line.value("user", ""), "component-user");
  EXPECT_EQ(line.value("handler", ""), "echo");
}

TEST_F(AuthHookTest, TheHookRefusesWithItsOwnBodyAndIsCountedAsUnauthorized) {
  for (const std::string& token : {std::string(), std::string("guess")}) {
    SCOPED_TRACE(token);
    Result<Response> r = Echo(token);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->body, R"({"custom":"refusal"})");
    EXPECT_EQ(r->Header("WWW-Authenticate"), "Bearer");
  }
  EXPECT_EQ(hook_calls_.load(), 2);
  const json line = LogLine(401);
  EXPECT_EQ(line.value("auth_error", ""), "unknown credentials");
  EXPECT_FALSE(line.contains("handler"));  // The handler never ran.
  EXPECT_NE(metrics::ExposeText(registry_).find(
                "sluice_http_unauthorized_requests_total{server=\"http\"} 2"),
            std::string::npos)
      << metrics::ExposeText(registry_);
  // Health stays open without asking the hook.
  ClientOptions options;
  options.base_url = server_->BaseUrl();
  Result<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Get("/healthz")->status, 200);
  EXPECT_EQ(hook_calls_.load(), 2);
}

}  // namespace
}  // namespace sluice::http
