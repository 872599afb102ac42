// Request::bulk_body: responses read by BulkExchange (common/http/bulk_exchange.h) instead of
// cpp-httplib, against the real http::Server and against a scripted raw socket; and the head
// parser it relies on (common/http/response_head.h).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/response_head.h"
#include "common/http/server.h"
#include "common/metrics/exposition.h"
#include "tests/support/loopback_listener.h"

namespace sluice::http {
namespace {

using std::chrono::milliseconds;

TEST(ResponseHeadTest, ParsesStatusHeadersAndFraming) {
  struct Case {
    const char* head;
    int status;
    std::optional<uint64_t> length;
    bool chunked;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", 200, 12, false},
      {"HTTP/1.0 204 No Content\r\n\r\n", 204, std::nullopt, false},
      {"HTTP/1.1 404\r\ncontent-length:  0 \r\n\r\n", 404, 0, false},  // No reason; spaces.
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 200, std::nullopt, true},
      {"HTTP/1.1 200 OK\nContent-Length: 3\n\n", 200, 3, false},  // Bare LF.
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 200, 5, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.head);
    Result<ResponseHead> head = ParseResponseHead(c.head);
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    EXPECT_EQ(head->status, c.status);
    EXPECT_EQ(head->content_length, c.length);
    EXPECT_EQ(head->chunked, c.chunked);
  }
  Result<ResponseHead> head = ParseResponseHead("HTTP/1.1 503 Busy\r\nRetry-After: 2\r\n\r\n");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->headers.find("retry-after")->second, "2");  // Names case-insensitive.
  EXPECT_TRUE(ParseResponseHead("HTTP/1.1 304 Not Modified\r\n\r\n")->NoBody());
  EXPECT_TRUE(ParseResponseHead("HTTP/1.1 100 Continue\r\n\r\n")->NoBody());
  EXPECT_FALSE(ParseResponseHead("HTTP/1.1 200 OK\r\n\r\n")->NoBody());
}

TEST(ResponseHeadTest, RefusesMalformedHeadsSayingWhat) {
  struct Case {
    const char* head;
    const char* says;
  };
  const Case cases[] = {
      {"", "no status line"},
      {"HTTP/2 200 OK\r\n\r\n", "status line"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "status code"},
      {"HTTP/1.1 099 Low\r\n\r\n", "status code"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "status line"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "two different"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.head);
    Result<ResponseHead> head = ParseResponseHead(c.head);
    ASSERT_FALSE(head.ok());
    EXPECT_EQ(head.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(head.status().message().find(c.says), std::string::npos) << head.status().ToString();
  }
}

TEST(ResponseHeadTest, FindsTheEndOfTheHead) {
  EXPECT_EQ(FindHeadEnd("HTTP/1.1 200 OK\r\n\r\nbody"), 19U);
  EXPECT_EQ(FindHeadEnd("HTTP/1.1 200 OK\n\nbody"), 17U);
  EXPECT_EQ(FindHeadEnd("HTTP/1.1 200 OK\r\nA: b\r\n"), std::nullopt);
  EXPECT_EQ(FindHeadEnd(""), std::nullopt);
}

// `bytes` bytes that differ from any shifted copy of themselves.
std::string Pattern(size_t bytes) {
  std::string body(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) body[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return body;
}

class BulkBody : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.auth = TokenSource::FromValue("secret");
    server_ = std::make_unique<Server>(
        std::move(options), &registry_,
        log::Logger("test", SystemClock::Instance(), [](std::string_view) {}));
    server_->Get("/v1/big", [](const httplib::Request& req, httplib::Response& res) {
      const size_t bytes = std::stoul(req.get_param_value("bytes"));
      auto body = std::make_shared<std::string>(Pattern(bytes));
      if (req.get_param_value("chunked") == "1") {
        res.set_chunked_content_provider(
            "application/octet-stream", [body](size_t offset, httplib::DataSink& sink) {
              if (offset == body->size()) {
                sink.done();
                return true;
              }
              return sink.write(body->data() + offset,
                                std::min<size_t>(body->size() - offset, 65536));
            });
      } else {
        res.set_content(std::move(*body), "application/octet-stream");
      }
    });
    server_->Get("/v1/headers", [](const httplib::Request& req, httplib::Response& res) {
      ReplyJson(res, {{"host", req.get_header_value("Host")},
                      {"agent", req.get_header_value("User-Agent")},
                      {"extra", req.get_header_value("X-Extra")},
                      {"connection", req.get_header_value("Connection")}});
    });
    server_->Get("/v1/empty",
                 [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    server_->Get("/v1/slow", [](const httplib::Request& req, httplib::Response& res) {
      std::this_thread::sleep_for(milliseconds(std::stoi(req.get_param_value("ms"))));
      ReplyJson(res, {{"ok", true}});
    });
    server_->Get("/v1/flaky", [this](const httplib::Request&, httplib::Response& res) {
      if (flaky_failures_.fetch_sub(1) > 0) {
        res.set_header("Retry-After", "0");
        return ReplyError(res, Status::Unavailable("try again"));
      }
      ReplyJson(res, {{"ok", true}});
    });
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<Client> MakeClient(ClientOptions options = {}) {
    if (options.base_url.empty()) options.base_url = server_->BaseUrl();
    if (!options.token) options.token = TokenSource::FromValue("secret");
    options.backoff.base_delay = milliseconds(1);
    options.backoff.max_delay = milliseconds(5);
    Result<std::unique_ptr<Client>> client = Client::Create(std::move(options));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  static Request Bulk(std::string path) {
    Request r;
    r.path = std::move(path);
    r.bulk_body = true;
    return r;
  }

  metrics::Registry registry_;
  std::unique_ptr<Server> server_;
  std::atomic<int> flaky_failures_{0};
};

TEST_F(BulkBody, BodiesArriveWholeWithTheirStatusAndHeaders) {
  std::unique_ptr<Client> client = MakeClient();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100'000}, size_t{40} << 20}) {
    Result<Response> r = client->Send(Bulk("/v1/big?bytes=" + std::to_string(bytes)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->Header("Content-Type"), "application/octet-stream");
    EXPECT_TRUE(r->body == Pattern(bytes)) << bytes << " bytes";
  }
  Result<Response> empty = client->Send(Bulk("/v1/empty"));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->status, 204);
  EXPECT_TRUE(empty->body.empty());
  // Error replies are read whole, as Send reads them.
  Result<Response> missing = client->Send(Bulk("/v1/nowhere"));
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no route"), std::string::npos) << missing->body;
}

TEST_F(BulkBody, SendsTheTokenHostAgentAndHeaders) {
  std::unique_ptr<Client> client = MakeClient();
  Request r = Bulk("/v1/headers");
  r.headers.emplace("X-Extra", "42");
  Result<Response> reply = client->Send(r);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->status, 200) << reply->body;  // The server checks the bearer token.
  const nlohmann::json j = nlohmann::json::parse(reply->body);
  EXPECT_EQ(j["host"], "127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_EQ(j["agent"], "sluice/0.1.0");
  EXPECT_EQ(j["extra"], "42");
  EXPECT_EQ(j["connection"], "close");

  ClientOptions wrong;
  wrong.token = TokenSource::FromValue("nope");
  Result<Response> refused = MakeClient(wrong)->Send(Bulk("/v1/headers"));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 401);

  r.headers.emplace("X-Bad", "a\r\nInjected: yes");
  Result<Response> injected = client->Send(r);
  ASSERT_FALSE(injected.ok());
  EXPECT_EQ(injected.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BulkBody, RetriesLikeSendAndReportsFailuresTheSameWay) {
  std::unique_ptr<Client> client = MakeClient();
  flaky_failures_ = 2;
  Result<Response> r = client->Send(Bulk("/v1/flaky"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);  // Two 503s with Retry-After, then success.

  ClientOptions capped;
  capped.max_response_bytes = 1 << 20;
  Result<Response> over = MakeClient(capped)->Send(Bulk("/v1/big?bytes=1048577"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(over.status().message().find("larger than 1048576 bytes"), std::string::npos);

  Result<Response> chunked = client->Send(Bulk("/v1/big?bytes=10&chunked=1"));
  ASSERT_FALSE(chunked.ok());
  EXPECT_NE(chunked.status().message().find("chunked"), std::string::npos);

  ClientOptions impatient;
  impatient.read_timeout = milliseconds(100);
  impatient.max_attempts = 1;
  const auto start = std::chrono::steady_clock::now();
  Result<Response> slow = MakeClient(impatient)->Send(Bulk("/v1/slow?ms=1500"));
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("no data within 100 ms"), std::string::npos)
      << slow.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1400));

  const std::string url = server_->BaseUrl();
  server_->Shutdown();
  ClientOptions gone;
  gone.base_url = url;
  gone.max_attempts = 3;
  Result<Response> refused = MakeClient(gone)->Send(Bulk("/v1/big?bytes=1"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("GET " + url + "/v1/big?bytes=1: connect"),
            std::string::npos)
      << refused.status().ToString();
}

TEST_F(BulkBody, CancellationEndsAWaitAtOnce) {
  std::unique_ptr<Client> client = MakeClient();
  CancellationSource source;
  Request r = Bulk("/v1/slow?ms=1500");
  r.cancel = source.Token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    source.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  Result<Response> reply = client->Send(r);
  canceller.join();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kCancelled) << reply.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
}

// A peer that answers every connection with `reply` and closes it.
class ScriptedPeer {
 public:
  explicit ScriptedPeer(std::string reply) : reply_(std::move(reply)) {
    thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        if (c < 0) return;
        char buf[4096];
        (void)::recv(c, buf, sizeof(buf), 0);  // The request (small); not checked.
        (void)::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~ScriptedPeer() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }

 private:
  std::string reply_;
  test_support::LoopbackListener listener_;
  std::thread thread_;
};

TEST(BulkBodyPeer, ATruncatedOrMalformedReplyIsAnErrorNotAShortBody) {
  struct Case {
    const char* reply;
    const char* says;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
       "closed the connection after 10 of 100 body bytes"},
      {"HTTP/1.1 200 OK\r\nContent-Le", "in the middle of the response head"},
      {"", "without a response"},
      {"SMTP ready\r\n\r\n", "status line"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reply);
    ScriptedPeer peer(c.reply);
    ClientOptions options;
    options.base_url = peer.url();
    options.max_attempts = 1;
    Request r;
    r.path = "/v1/batch";
    r.bulk_body = true;
    Result<Response> reply = Client::Create(options).value()->Send(r);
    ASSERT_FALSE(reply.ok());
    EXPECT_NE(reply.status().message().find(c.says), std::string::npos)
        << reply.status().ToString();
  }
  // A body that runs to the end of the connection (no Content-Length) arrives whole.
  ScriptedPeer to_end("HTTP/1.0 200 OK\r\n\r\nall of it");
  ClientOptions options;
  options.base_url = to_end.url();
  Request r;
  r.bulk_body = true;
  Result<Response> reply = Client::Create(options).value()->Send(r);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->body, "all of it");
}

}  // namespace
}  // namespace sluice::http
