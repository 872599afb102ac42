// A test fixture running the local API server (api_server.h) in-process on a free port over
// MemoryStorage, with an admin client (the kubeconfig token's user, in system:masters) and
// helpers to send requests as other users and to wait for access-log lines. Clients are
// sluice::http::Client, as in api_server_test_support.h.
//
// Thread safety: used from the test's thread; the server's log lines are guarded by log_mu_.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/memory_storage.h"

namespace sluice::apiserver {

inline constexpr char kInProcessAdminToken[] = "in-process-api-server-test-token";

inline nlohmann::json Body(const http::Response& r) {
  return nlohmann::json::parse(r.body, nullptr, false);
}

class InProcessApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions options;
    options.http.port = 0;
    options.http.auth = http::TokenSource::FromValue(kInProcessAdminToken);
    options.http.shutdown_grace = std::chrono::milliseconds(500);
    options.gc_period = std::chrono::milliseconds(50);
    options.service_account_tokens.signing_key = "in-process-api-server-test-key";
    Configure(options);
    log::Logger logger("apiserver-test", clock_, [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_lines_.emplace_back(line);
    });
    Result<std::unique_ptr<ApiServer>> server = ApiServer::Create(
        std::move(options), std::make_unique<MemoryStorage>(), &clock_, &metrics_, logger);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    ASSERT_TRUE(server_->Start().ok());
    admin_ = Client(kInProcessAdminToken);
    ASSERT_NE(admin_, nullptr);
  }
  void TearDown() override {
    admin_.reset();
    if (server_) server_->Shutdown();
    server_.reset();  // Before the log lines it writes to go.
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mu_);
      for (const std::string& line : log_lines_) std::cerr << line << "\n";
    }
  }

  // Changes the server's options before it starts (tests that need other limits).
  virtual void Configure(ApiServerOptions& options) { (void)options; }

  // Lets every ServiceAccount read everything (ClusterRole view), for tests about something
  // other than authorization (rbac_api_test.cpp tests that).
  void LetServiceAccountsView() {
    const http::Response bound = Post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", "ClusterRoleBinding"},
         {"metadata", {{"name", "service-accounts-view"}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "view"}}},
         {"subjects",
          {{{"apiGroup", "rbac.authorization.k8s.io"},
            {"kind", "Group"},
            {"name", "system:serviceaccounts"}}}}});
    ASSERT_EQ(bound.status, 201) << bound.body;
  }

  // A token for ServiceAccount default/<account> (created first) from the TokenRequest API.
  std::string ServiceAccountToken(const std::string& account) {
    const std::string accounts = "/api/v1/namespaces/default/serviceaccounts";
    const http::Response made = Post(accounts, {{"metadata", {{"name", account}}}});
    EXPECT_TRUE(made.status == 201 || made.status == 409) << made.body;
    const http::Response r = Post(accounts + "/" + account + "/token", nlohmann::json::object());
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value(nlohmann::json::json_pointer("/status/token"), "");
  }

  // A client sending `token` (none when empty).
  // `read_timeout` bounds the silence between bytes (an idle watch sends none).
  std::unique_ptr<http::Client> Client(
      const std::string& token, std::chrono::seconds read_timeout = std::chrono::seconds(10)) {
    http::ClientOptions options;
    options.base_url = server_->BaseUrl();
    if (!token.empty()) options.token = http::TokenSource::FromValue(token);
    options.max_attempts = 1;
    options.read_timeout = read_timeout;
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
    if (!client.ok()) {
      ADD_FAILURE() << client.status().message();
      return nullptr;
    }
    return std::move(*client);
  }

  static http::Response Send(http::Client& client, const std::string& method,
                             const std::string& path, const nlohmann::json& body = nullptr,
                             const httplib::Headers& headers = {}) {
    http::Request request;
    request.method = method;
    request.path = path;
    request.headers = headers;
    if (!body.is_null()) {
      request.body = body.dump();
      request.content_type = "application/json";
    }
    Result<http::Response> reply = client.Send(std::move(request));
    if (!reply.ok()) {
      ADD_FAILURE() << method << " " << path << ": " << reply.status().message();
      return http::Response{};
    }
    return std::move(*reply);
  }
  http::Response Get(const std::string& path) { return Send(*admin_, "GET", path); }
  http::Response Post(const std::string& path, const nlohmann::json& body) {
    return Send(*admin_, "POST", path, body);
  }
  http::Response Delete(const std::string& path) { return Send(*admin_, "DELETE", path); }

  // Whether a log line has every fragment, waiting up to 5 s (access logs follow the reply).
  bool Logged(const std::vector<std::string>& fragments) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      {
        std::lock_guard<std::mutex> lock(log_mu_);
        for (const std::string& line : log_lines_) {
          bool all = true;
          for (const std::string& f : fragments) all = all && line.find(f) != std::string::npos;
          if (all) return true;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  SystemClock clock_;
  metrics::Registry metrics_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<http::Client> admin_;
  std::mutex log_mu_;
  std::vector<std::string> log_lines_;
};

}  // namespace sluice::apiserver
