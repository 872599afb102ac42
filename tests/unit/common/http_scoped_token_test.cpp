// Scoped tokens (scoped_token.h) through a real server: a narrower role's token reaches only the
// routes of its scope (403 naming the role elsewhere, before the body is read), the server's own
// token reaches every route, and any other token gets 401.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/scoped_token.h"
#include "common/http/server.h"

namespace sluice::http {
namespace {

constexpr char kOwnToken[] = "own-token-0123456789";
constexpr char kReaderToken[] = "reader-token";

TEST(ScopedTokenTest, AdmitsTheMethodAndWholePathsOfItsScope) {
  const ScopedToken t("reader", TokenSource::FromValue(kReaderToken),
                      {{"GET", "/v1/items"}, {"GET", "/v1/items/[^/]+"}, {"POST", "/v1/notes"}});
  EXPECT_TRUE(t.Admits("GET", "/v1/items"));
  EXPECT_TRUE(t.Admits("GET", "/v1/items/a-1"));
  EXPECT_TRUE(t.Admits("POST", "/v1/notes"));
  EXPECT_FALSE(t.Admits("POST", "/v1/items"));     // Another method.
  EXPECT_FALSE(t.Admits("GET", "/v1/items/a/b"));  // [^/]+ stops at a slash.
  EXPECT_FALSE(t.Admits("GET", "/v1/items-all"));  // The whole path must match.
  EXPECT_FALSE(t.Admits("GET", "/prefix/v1/items"));
  EXPECT_EQ(t.role(), "reader");
}

class ScopedTokenServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.auth = TokenSource::FromValue(kOwnToken);
    options.shutdown_grace = std::chrono::milliseconds(200);
    options.access_log = false;
    std::vector<ScopedToken> tokens;
    tokens.emplace_back("reader", TokenSource::FromValue(kReaderToken),
                        std::vector<RouteScope>{{"GET", "/v1/items/[^/]+"}});
    options.authenticate_other = ScopedTokenHook(std::move(tokens));
    server_ = std::make_unique<Server>(std::move(options), nullptr, logger_);
    server_->Get(R"(/v1/items/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
      ReplyJson(res, {{"item", req.matches[1].str()}});
    });
    server_->Post(R"(/v1/items/([^/]+)/delete)",
                  [this](const httplib::Request&, httplib::Response& res) {
                    ++deletes_;
                    ReplyJson(res, {{"deleted", true}});
                  });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Shutdown(); }

  Response Call(const std::string& token, const std::string& method, const std::string& path) {
    ClientOptions options;
    options.base_url = server_->BaseUrl();
    options.max_attempts = 1;
    if (!token.empty()) options.token = TokenSource::FromValue(token);
    Request req;
    req.method = method;
    req.path = path;
    if (method == "POST") {
      req.body = "{}";
      req.content_type = "application/json";
    }
    Result<Response> r = std::move(Client::Create(options)).value()->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Response{};
  }

  log::Logger logger_{"scoped-token-test"};
  std::unique_ptr<Server> server_;
  std::atomic<int> deletes_{0};
};

TEST_F(ScopedTokenServerTest, TheScopedTokenReachesOnlyItsScope) {
  EXPECT_EQ(Call(kReaderToken, "GET", "/v1/items/a").status, 200);
  const Response refused = Call(kReaderToken, "POST", "/v1/items/a/delete");
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.find("the reader token may not POST /v1/items/a/delete"),
            std::string::npos)
      << refused.body;
  EXPECT_EQ(deletes_.load(), 0);  // Refused before the handler ran.
  // The server's own token reaches both; any other token neither.
  EXPECT_EQ(Call(kOwnToken, "GET", "/v1/items/a").status, 200);
  EXPECT_EQ(Call(kOwnToken, "POST", "/v1/items/a/delete").status, 200);
  EXPECT_EQ(deletes_.load(), 1);
  const Response stranger = Call("stranger", "GET", "/v1/items/a");
  EXPECT_EQ(stranger.status, 401) << stranger.body;
  EXPECT_NE(stranger.body.find("the bearer token is not valid"), std::string::npos);
  EXPECT_EQ(Call("", "GET", "/v1/items/a").status, 401);
}

}  // namespace
}  // namespace sluice::http
