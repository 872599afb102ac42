// The server's limits on a client's time and on its queue, through real sockets on loopback:
// a request that does not arrive whole within the request deadline is answered 408 (plain and
// TLS), whatever the per-read timeout; handlers and keep-alive requests are not cut by it; and a
// connection the full worker pool has no room for is answered 503 with Retry-After at once,
// which the client resends whatever the method.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/http/client.h"
#include "common/http/deadline_server.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/metrics/exposition.h"

namespace sluice::http {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using LimitsClock = std::chrono::steady_clock;

int ConnectToLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};  // No test waits this long for the server.
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Both ends of a connection as the test drives it: plain, or TLS over the socket.
struct LimitsConnection {
  int fd = -1;
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;

  ~LimitsConnection() {
    if (ssl != nullptr) SSL_free(ssl);
    if (ctx != nullptr) SSL_CTX_free(ctx);
    if (fd >= 0) ::close(fd);
  }
  bool Send(const std::string& bytes) {
    if (ssl != nullptr) return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) > 0;
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // What arrives until the server closes the connection (or 10 s pass).
  std::string ReadToClose() {
    std::string out;
    char buf[4096];
    for (;;) {
      const int n = ssl != nullptr ? SSL_read(ssl, buf, sizeof(buf))
                                   : static_cast<int>(::recv(fd, buf, sizeof(buf), 0));
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads one response whose body is `Content-Length` bytes (keep-alive requests).
  std::string ReadOneResponse() {
    std::string out;
    char c;
    while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) out += c;
    const size_t at = out.find("Content-Length: ");
    if (at == std::string::npos) return out;
    size_t length = std::stoul(out.substr(at + 16));
    while (length > 0 && ::recv(fd, &c, 1, 0) == 1) {
      out += c;
      --length;
    }
    return out;
  }
};

std::unique_ptr<LimitsConnection> OpenPlain(int port) {
  auto c = std::make_unique<LimitsConnection>();
  c->fd = ConnectToLoopback(port);
  return c;
}

// A TLS client that does not verify the server (the test made its certificate).
std::unique_ptr<LimitsConnection> OpenTls(int port) {
  auto c = std::make_unique<LimitsConnection>();
  c->fd = ConnectToLoopback(port);
  c->ctx = SSL_CTX_new(TLS_client_method());
  c->ssl = SSL_new(c->ctx);
  SSL_set_fd(c->ssl, c->fd);
  if (SSL_connect(c->ssl) != 1) {
    SSL_free(c->ssl);
    c->ssl = nullptr;
  }
  return c;
}

class HttpRequestLimits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cert_dir_ = new fs::path(fs::temp_directory_path() /
                             ("sluice-limits-tls-" + std::to_string(::getpid())));
    fs::create_directories(*cert_dir_);
    const std::string script = "cd " + cert_dir_->string() +
                               " && openssl req -x509 -newkey rsa:2048 -nodes -keyout server.key "
                               "-out server.crt -days 2 -subj /CN=127.0.0.1 2>/dev/null";
    certs_made_ = std::system(script.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*cert_dir_);
    delete cert_dir_;
  }
  void TearDown() override {
    release_.store(true);
    if (server_) server_->Shutdown();
  }

  void Start(ServerOptions options) {
    options.name = "limits";
    options.access_log = false;
    options.shutdown_grace = milliseconds(3000);
    server_ = std::make_unique<Server>(std::move(options), &registry_, logger_);
    server_->Get("/v1/ping", [](const httplib::Request&, httplib::Response& res) {
      ReplyJson(res, {{"ok", true}});
    });
    server_->Get("/v1/sleep", [](const httplib::Request& req, httplib::Response& res) {
      std::this_thread::sleep_for(milliseconds(std::stoi(req.get_param_value("ms"))));
      ReplyJson(res, {{"slept", true}});
    });
    server_->Get("/v1/hold", [this](const httplib::Request&, httplib::Response& res) {
      while (!release_.load()) std::this_thread::sleep_for(milliseconds(5));
      ReplyJson(res, {{"held", true}});
    });
    server_->Post("/v1/create", [this](const httplib::Request& req, httplib::Response& res) {
      ++creates_;
      ReplyJson(res, {{"bytes", req.body.size()}}, 201);
    });
    ASSERT_TRUE(server_->Start().ok());
  }

  double CounterValue(const std::string& name) {
    const std::string text = metrics::ExposeText(registry_);
    const std::string key = name + "{server=\"limits\"} ";
    const size_t at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }

  // Waits (bounded) for a counter written after the connection closed.
  double AwaitCounter(const std::string& name, double want) {
    double v = CounterValue(name);
    for (int i = 0; i < 300 && v != want; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
      v = CounterValue(name);
    }
    return v;
  }

  std::unique_ptr<Client> MakeLimitsClient(int attempts) {
    ClientOptions co;
    co.base_url = server_->BaseUrl();
    co.max_attempts = attempts;
    return std::move(Client::Create(co)).value();
  }

  static inline fs::path* cert_dir_ = nullptr;
  static inline bool certs_made_ = false;
  metrics::Registry registry_;
  log::Logger logger_{"limits-test"};
  std::unique_ptr<Server> server_;
  std::atomic<bool> release_{false};
  std::atomic<int> creates_{0};
};

struct DripCase {
  const char* name;
  std::string at_once;  // Sent whole, at once.
  std::string dripped;  // Then a byte every 50 ms, for far longer than the deadline.
  bool tls = false;
};

class RequestDeadline : public HttpRequestLimits, public ::testing::WithParamInterface<DripCase> {};

// A client that keeps each read within the 5 s read timeout but never finishes its request is
// answered 408 once the 400 ms deadline passes, and the connection is closed.
TEST_P(RequestDeadline, ADrippingClientGets408AtTheDeadline) {
  const DripCase& c = GetParam();
  ServerOptions options;
  options.read_timeout = milliseconds(5000);
  options.request_deadline = milliseconds(400);
  if (c.tls) {
    ASSERT_TRUE(certs_made_) << "openssl could not make a test certificate";
    options.tls = ServerTlsOptions{(*cert_dir_ / "server.crt").string(),
                                   (*cert_dir_ / "server.key").string(), ""};
  }
  Start(options);
  std::unique_ptr<LimitsConnection> conn =
      c.tls ? OpenTls(server_->port()) : OpenPlain(server_->port());
  ASSERT_GE(conn->fd, 0);
  ASSERT_TRUE(!c.tls || conn->ssl != nullptr) << "TLS handshake failed";
  const auto began = LimitsClock::now();
  ASSERT_TRUE(conn->Send(c.at_once));
  std::atomic<bool> stop{false};
  // Over TLS the reader and the dripper share one SSL object, which is not thread-safe: drip
  // only before the deadline there, then read.
  const int drips = c.tls ? 6 : static_cast<int>(c.dripped.size());
  std::thread dripper([&] {
    for (int i = 0; i < drips && !stop.load(); ++i) {
      if (!conn->Send(std::string(1, c.dripped[static_cast<size_t>(i)]))) return;
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  if (c.tls) dripper.join();
  const std::string answer = conn->ReadToClose();
  const auto took = LimitsClock::now() - began;
  stop.store(true);
  if (!c.tls) dripper.join();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find("the request was not received within 400 ms"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"reason\":\"RequestTimeout\""), std::string::npos) << answer;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(2500));
  EXPECT_EQ(AwaitCounter("sluice_http_request_deadline_exceeded_total", 1), 1);
  if (!c.tls) {  // The server serves others normally.
    Result<Response> ok = MakeLimitsClient(1)->Get("/v1/ping");
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(ok->status, 200);
  }
}

const std::string kLongHeader = "X-Slow: " + std::string(200, 'a') + "\r\n";

INSTANTIATE_TEST_SUITE_P(
    Parts, RequestDeadline,
    ::testing::Values(DripCase{"RequestLine", "", "GET /v1/ping?" + std::string(200, 'q')},
                      DripCase{"Headers", "GET /v1/ping HTTP/1.1\r\nHost: x\r\n", kLongHeader},
                      DripCase{"Body",
                               "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               "application/json\r\nContent-Length: 200\r\n\r\n",
                               std::string(200, ' ')},
                      DripCase{"TlsHeaders", "GET /v1/ping HTTP/1.1\r\nHost: x\r\n", kLongHeader,
                               true}),
    [](const ::testing::TestParamInfo<DripCase>& info) { return std::string(info.param.name); });

// The deadline bounds reading a request, not handling it: a handler that takes longer than the
// deadline (a long poll) answers normally.
TEST_F(HttpRequestLimits, HandlersLongerThanTheDeadlineAreNotCut) {
  ServerOptions options;
  options.request_deadline = milliseconds(300);
  Start(options);
  Result<Response> r = MakeLimitsClient(1)->Get("/v1/sleep?ms=900");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(CounterValue("sluice_http_request_deadline_exceeded_total"), 0);
}

// Each request on a keep-alive connection gets its own deadline, from its own first byte: an
// idle gap longer than the deadline between two requests is the keep-alive timeout's business.
TEST_F(HttpRequestLimits, EachKeepAliveRequestHasItsOwnDeadline) {
  ServerOptions options;
  options.request_deadline = milliseconds(300);
  options.keep_alive_timeout = std::chrono::seconds(3);
  Start(options);
  std::unique_ptr<LimitsConnection> conn = OpenPlain(server_->port());
  const std::string request = "GET /v1/ping HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(conn->Send(request));
  EXPECT_EQ(conn->ReadOneResponse().rfind("HTTP/1.1 200", 0), 0u);
  std::this_thread::sleep_for(milliseconds(700));
  ASSERT_TRUE(conn->Send(request));
  const std::string second = conn->ReadOneResponse();
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
  EXPECT_NE(second.find("{\"ok\":true}"), std::string::npos) << second;
}

// One worker, one queued connection: the next is answered 503 with Retry-After and the
// unread-request mark at once, instead of waiting; a POST refused so is resent by the client
// (the server never read it) and is created exactly once.
TEST_F(HttpRequestLimits, AFullPoolAnswers503WithRetryAfterAndTheClientResends) {
  ServerOptions options;
  options.worker_threads = 1;
  options.max_queued_connections = 1;
  // The holder's idle keep-alive connection keeps the only worker after its answer.
  options.keep_alive_timeout = std::chrono::seconds(1);
  Start(options);
  std::unique_ptr<Client> holder = MakeLimitsClient(1);
  std::thread held([&] { EXPECT_TRUE(holder->Get("/v1/hold").ok()); });
  for (int i = 0; i < 300 && server_->in_flight() == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(server_->in_flight(), 1);
  // The queued one: accepted, waiting for the only worker.
  std::unique_ptr<LimitsConnection> queued = OpenPlain(server_->port());
  ASSERT_TRUE(queued->Send("GET /v1/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(200));

  const auto asked = LimitsClock::now();
  Result<Response> refused = MakeLimitsClient(1)->Get("/v1/ping");
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_LT(LimitsClock::now() - asked, milliseconds(1500));
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_EQ(refused->Header("Retry-After"), "1");
  EXPECT_EQ(refused->Header(kRequestUnreadHeader), "true");
  EXPECT_NE(refused->body.find("serving as many connections as it can"), std::string::npos)
      << refused->body;
  EXPECT_EQ(AwaitCounter("sluice_http_refused_connections_total", 1), 1);

  // A POST meets the same refusal, then goes through once the pool has room.
  std::atomic<int> create_status{0};
  std::thread creator([&] {
    Result<Response> r = MakeLimitsClient(8)->Post("/v1/create", "{}", "application/json");
    create_status.store(r.ok() ? r->status : -1);
  });
  EXPECT_EQ(AwaitCounter("sluice_http_refused_connections_total", 2), 2);
  release_.store(true);
  held.join();
  creator.join();
  EXPECT_EQ(create_status.load(), 201);
  EXPECT_EQ(creates_.load(), 1);
  EXPECT_EQ(queued->ReadToClose().rfind("HTTP/1.1 200", 0), 0u);
}

}  // namespace
}  // namespace sluice::http
