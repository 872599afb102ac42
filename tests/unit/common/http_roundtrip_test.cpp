// The HTTP server and client together on loopback: auth, limits, errors, timeouts, retries,
// streaming, graceful shutdown, concurrency, TLS, and the hosts-file resolver.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/metrics/exposition.h"

namespace sluice::http {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Collects log lines instead of writing them to stderr.
struct LogCapture {
  std::mutex mu;
  std::vector<std::string> lines;
  log::Logger logger{"test", SystemClock::Instance(), [this](std::string_view line) {
                       std::lock_guard<std::mutex> lock(mu);
                       lines.emplace_back(line);
                     }};
  std::vector<nlohmann::json> Parsed() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<nlohmann::json> out;
    for (const std::string& l : lines) out.push_back(nlohmann::json::parse(l));
    return out;
  }
};

// `bytes` bytes that differ from any shifted copy of themselves.
std::string BigBody(size_t bytes) {
  std::string body(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) body[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return body;
}

class HttpRoundTrip : public ::testing::Test {
 protected:
  // Request metrics and access logs are recorded after the response is written, so a client
  // can see its reply a moment before they are: wait (bounded) for `fragment` to appear.
  std::string ExpositionWith(const std::string& fragment) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      text = metrics::ExposeText(registry_);
      if (text.find(fragment) != std::string::npos) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return text;
  }

  // Starts a server with `options` and the routes every test uses.
  void StartServer(ServerOptions options) {
    server_ = std::make_unique<Server>(std::move(options), &registry_, logs_.logger);
    server_->Get("/v1/echo", [](const httplib::Request& req, httplib::Response& res) {
      ReplyJson(res, {{"q", req.get_param_value("q")}});
    });
    server_->Post("/v1/things", [](const httplib::Request& req, httplib::Response& res) {
      Result<nlohmann::json> body = ParseJsonObject(req);
      if (!body.ok()) return ReplyError(res, body.status());
      if (!body->contains("name")) {
        return ReplyError(res, Status::Unprocessable("is required", "name"));
      }
      ReplyJson(res, {{"created", (*body)["name"]}}, 201);
    });
    server_->Get(R"(/v1/things/([a-z0-9-]+))",
                 [](const httplib::Request& req, httplib::Response& res) {
                   ReplyJson(res, {{"name", req.matches[1].str()}});
                 });
    server_->Get("/v1/slow", [this](const httplib::Request& req, httplib::Response& res) {
      const int ms = std::stoi(req.get_param_value("ms"));
      slow_started_ = true;
      std::this_thread::sleep_for(milliseconds(ms));
      ReplyJson(res, {{"slept_ms", ms}});
    });
    server_->Get("/v1/flaky", [this](const httplib::Request&, httplib::Response& res) {
      if (flaky_failures_.fetch_sub(1) > 0) {
        res.set_header("Retry-After", "0");
        return ReplyError(res, Status::Unavailable("try again"));
      }
      ReplyJson(res, {{"ok", true}});
    });
    server_->Post("/v1/flaky", [this](const httplib::Request&, httplib::Response& res) {
      ++flaky_posts_;
      if (flaky_failures_.fetch_sub(1) > 0) {
        if (limit_instead_) {
          res.set_header("Retry-After", "0");
          return ReplyError(res, Status::TooManyRequests("slow down"));
        }
        return ReplyError(res, Status::Unavailable("try again"));
      }
      ReplyJson(res, {{"ok", true}});
    });
    server_->Get("/v1/port", [](const httplib::Request& req, httplib::Response& res) {
      ReplyJson(res, {{"port", req.remote_port}});
    });
    server_->Get("/v1/stream", [](const httplib::Request& req, httplib::Response& res) {
      const int chunks = std::stoi(req.get_param_value("chunks"));
      res.set_chunked_content_provider(
          "application/octet-stream", [chunks, sent = 0](size_t, httplib::DataSink& sink) mutable {
            if (sent == chunks) {
              sink.done();
              return true;
            }
            const std::string chunk = "chunk-" + std::to_string(sent++) + ";";
            return sink.write(chunk.data(), chunk.size());
          });
    });
    server_->Get("/v1/big", [](const httplib::Request& req, httplib::Response& res) {
      const size_t bytes = std::stoul(req.get_param_value("bytes"));
      auto body = std::make_shared<std::string>(BigBody(bytes));
      if (req.get_param_value("chunked") == "1") {  // No Content-Length: the body grows.
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
    server_->Get("/v1/throws", [](const httplib::Request&, httplib::Response&) {
      throw std::runtime_error("boom");
    });
    server_->AddReadinessCheck("dependency", [this] {
      return dependency_ready_ ? Status::Ok() : Status::Unavailable("dataflow unreachable");
    });
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<Client> MakeClient(ClientOptions options = {}) {
    if (options.base_url.empty()) options.base_url = server_->BaseUrl();
    options.backoff.base_delay = milliseconds(1);
    options.backoff.max_delay = milliseconds(5);
    Result<std::unique_ptr<Client>> client = Client::Create(std::move(options));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  metrics::Registry registry_;
  LogCapture logs_;
  std::unique_ptr<Server> server_;
  std::atomic<bool> slow_started_{false};
  std::atomic<int> flaky_failures_{0};
  std::atomic<int> flaky_posts_{0};
  std::atomic<bool> limit_instead_{false};
  std::atomic<bool> dependency_ready_{true};
};

TEST_F(HttpRoundTrip, AuthAcceptsTheTokenAndRejectsOthersWith401) {
  ServerOptions options;
  // Long enough to live on the heap, so a dangling view of the header would show.
  const std::string token = "s3cret-" + std::string(48, 'k');
  options.auth = TokenSource::FromValue(token);
  StartServer(options);

  ClientOptions good;
  good.token = TokenSource::FromValue(token);
  Result<Response> r = MakeClient(good)->Get("/v1/echo?q=hi");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(nlohmann::json::parse(r->body)["q"], "hi");

  ClientOptions wrong;
  wrong.token = TokenSource::FromValue("guess");
  r = MakeClient(wrong)->Get("/v1/echo");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->Header("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(r->ToStatus(), Status::Unauthenticated("the bearer token is not valid"));

  r = MakeClient()->Post("/v1/things", R"({"name":"x"})", "application/json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->ToStatus().message().find("missing bearer token"), std::string::npos);

  // Health is open; metrics needs the token unless told otherwise.
  EXPECT_EQ(MakeClient()->Get("/healthz")->status, 200);
  EXPECT_EQ(MakeClient()->Get("/readyz")->status, 200);
  EXPECT_EQ(MakeClient()->Get("/metrics")->status, 401);
  EXPECT_EQ(MakeClient(good)->Get("/metrics")->status, 200);
  EXPECT_NE(metrics::ExposeText(registry_).find(
                "sluice_http_unauthorized_requests_total{server=\"http\"} 3"),
            std::string::npos)
      << metrics::ExposeText(registry_);
}

TEST_F(HttpRoundTrip, BodyOverTheLimitGets413WithAMessage) {
  ServerOptions options;
  options.max_body_bytes = 1024;
  StartServer(options);
  std::unique_ptr<Client> client = MakeClient();
  Result<Response> r = client->Post("/v1/things", "{\"name\":\"" + std::string(4096, 'x') + "\"}",
                                    "application/json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->ToStatus().code(), StatusCode::kTooLarge);
  EXPECT_NE(r->ToStatus().message().find("limit of 1024 bytes"), std::string::npos);
  // A body under the limit still works on the same client afterwards.
  r = client->Post("/v1/things", R"({"name":"small"})", "application/json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
}

TEST_F(HttpRoundTrip, MalformedJsonGets400NamingTheProblem) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  Result<Response> r = client->Post("/v1/things", R"({"name": "x",)", "application/json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  nlohmann::json body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["error"]["reason"], "BadRequest");
  EXPECT_NE(
      body["error"]["message"].get<std::string>().find("not valid JSON: syntax error at byte"),
      std::string::npos)
      << r->body;

  r = client->Post("/v1/things", R"({"other": 1})", "application/json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(r->ToStatus(), Status::Unprocessable("is required", "name"));
}

TEST_F(HttpRoundTrip, UnknownRouteGets404AndAThrowingHandler500) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  Result<Response> r = client->Get("/v1/nope");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->ToStatus(), Status::NotFound("no route for GET /v1/nope"));
  r = client->Get("/v1/things/abc-1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(nlohmann::json::parse(r->body)["name"], "abc-1");
  r = client->Get("/v1/throws");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->ToStatus().message(), "internal error: boom");
}

TEST_F(HttpRoundTrip, AccessLogAndMetricsUseTheRoutePattern) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_TRUE(client->Get("/v1/things/a").ok());
  ASSERT_TRUE(client->Get("/v1/things/b").ok());
  ASSERT_TRUE(client->Get("/v1/nope").ok());
  const std::string text = ExpositionWith("route=\"unmatched\",code=\"404\"} 1");
  EXPECT_NE(text.find("sluice_http_requests_total{server=\"http\",method=\"GET\",route=\"/v1/"
                      "things/([a-z0-9-]+)\",code=\"200\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("route=\"unmatched\",code=\"404\"} 1"), std::string::npos) << text;
  bool found = false;
  for (const nlohmann::json& line : logs_.Parsed()) {
    if (line["msg"] == "request" && line["path"] == "/v1/things/b") {
      found = true;
      EXPECT_EQ(line["level"], "info");
      EXPECT_EQ(line["status"], 200);
      EXPECT_EQ(line["server"], "http");
      EXPECT_GE(line["duration_seconds"].get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(HttpRoundTrip, ReadinessReflectsChecksAndShutdown) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  EXPECT_EQ(client->Get("/readyz")->status, 200);
  Result<Response> r = client->Get("/readyz?verbose");
  EXPECT_NE(r->body.find("[+]dependency ok"), std::string::npos) << r->body;
  dependency_ready_ = false;
  r = client->Get("/readyz");
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("[-]dependency failed: dataflow unreachable"), std::string::npos);
  EXPECT_EQ(client->Get("/healthz")->status, 200);  // Alive, though not ready.
}

TEST_F(HttpRoundTrip, ClientReadTimeoutFailsInsteadOfHanging) {
  StartServer({});
  ClientOptions options;
  options.read_timeout = milliseconds(100);
  options.max_attempts = 1;
  const auto start = std::chrono::steady_clock::now();
  Result<Response> r = MakeClient(options)->Get("/v1/slow?ms=1500");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GET http://127.0.0.1"), std::string::npos)
      << r.status().ToString();
  EXPECT_LT(elapsed, milliseconds(1400));
}

TEST_F(HttpRoundTrip, ServerClosesAConnectionThatStallsMidRequest) {
  ServerOptions options;
  options.read_timeout = milliseconds(200);
  StartServer(options);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string partial = "POST /v1/things HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
  ASSERT_EQ(::write(fd, partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto start = std::chrono::steady_clock::now();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_EQ(n, 0) << "the server should close the stalled connection";
  EXPECT_LT(elapsed, milliseconds(3000));
}

TEST_F(HttpRoundTrip, RetriesIdempotentRequestsAndHonoursRetryAfter) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  flaky_failures_ = 2;
  Result<Response> r = client->Get("/v1/flaky");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);  // Two 503s, then success.

  flaky_failures_ = 10;  // More than max_attempts: the last 503 comes back.
  r = client->Get("/v1/flaky");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);

  // POST is not idempotent: one attempt only on 503...
  flaky_failures_ = 1;
  flaky_posts_ = 0;
  r = client->Post("/v1/flaky", "{}", "application/json");
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(flaky_posts_.load(), 1);
  // ...unless the request says it is (a submit keyed by task id).
  flaky_failures_ = 1;
  flaky_posts_ = 0;
  Request marked;
  marked.method = "POST";
  marked.path = "/v1/flaky";
  marked.body = "{}";
  marked.content_type = "application/json";
  marked.idempotent = true;
  EXPECT_EQ(client->Send(marked)->status, 200);
  EXPECT_EQ(flaky_posts_.load(), 2);
  // 429 means the server refused without acting: retried for any method.
  limit_instead_ = true;
  flaky_failures_ = 2;
  flaky_posts_ = 0;
  EXPECT_EQ(client->Post("/v1/flaky", "{}", "application/json")->status, 200);
  EXPECT_EQ(flaky_posts_.load(), 3);
}

TEST_F(HttpRoundTrip, ConnectionRefusedIsRetriedThenReported) {
  StartServer({});
  const std::string url = server_->BaseUrl();
  server_->Shutdown();
  ClientOptions options;
  options.base_url = url;
  options.max_attempts = 3;
  Result<Response> r = MakeClient(options)->Get("/v1/echo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(),
            "GET " + url + "/v1/echo: cannot connect (connection refused or host unreachable)");
}

TEST_F(HttpRoundTrip, ReusesConnections) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  std::set<int> ports;
  for (int i = 0; i < 10; ++i) {
    Result<Response> r = client->Get("/v1/port");
    ASSERT_TRUE(r.ok());
    ports.insert(nlohmann::json::parse(r->body)["port"].get<int>());
  }
  EXPECT_EQ(ports.size(), 1u) << "sequential requests should share one keep-alive connection";
}

TEST_F(HttpRoundTrip, StreamsResponsesChunkByChunk) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  Request req;
  req.path = "/v1/stream?chunks=50";
  std::string received;
  int calls = 0;
  int head_status = 0;
  Result<Response> r = client->Stream(
      req,
      [&](const Response& head) {
        head_status = head.status;
        return true;
      },
      [&](std::string_view data) {
        ++calls;
        received.append(data);
        return true;
      });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(head_status, 200);
  EXPECT_TRUE(r->body.empty());
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "chunk-" + std::to_string(i) + ";";
  EXPECT_EQ(received, expected);
  EXPECT_GT(calls, 1);

  // The caller may stop early; that is not an error.
  req.path = "/v1/stream?chunks=100000";
  size_t bytes = 0;
  r = client->Stream(req, nullptr, [&](std::string_view data) {
    bytes += data.size();
    return bytes < 1000;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(bytes, 1000u);
  EXPECT_LT(bytes, 100000u * 8);

  // Errors are collected into the body, not streamed.
  req.path = "/v1/nope";
  bool data_called = false;
  r = client->Stream(req, nullptr, [&](std::string_view) { return data_called = true; });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(data_called);
  EXPECT_EQ(r->ToStatus().code(), StatusCode::kNotFound);
}

// Bodies are read into a string reserved from the Content-Length when there is one.
TEST_F(HttpRoundTrip, LargeBodiesArriveWholeWithOrWithoutContentLength) {
  StartServer(ServerOptions{});
  std::unique_ptr<Client> client = MakeClient();
  for (const char* chunked : {"0", "1"}) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{5} << 20}) {
      Result<Response> r =
          client->Get("/v1/big?bytes=" + std::to_string(bytes) + "&chunked=" + chunked);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->status, 200);
      EXPECT_TRUE(r->body == BigBody(bytes)) << bytes << " bytes, chunked " << chunked;
    }
  }
  // Error bodies are still read whole.
  Result<Response> missing = client->Get("/v1/nowhere");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no route"), std::string::npos) << missing->body;
}

// A body over max_response_bytes is abandoned as it arrives (by its Content-Length when it has
// one) and reported as TooLarge, once: retrying would only fetch it again.
TEST_F(HttpRoundTrip, ResponsesOverTheClientsCapAreRefused) {
  StartServer(ServerOptions{});
  ClientOptions options;
  options.max_response_bytes = size_t{1} << 20;
  std::unique_ptr<Client> client = MakeClient(options);
  for (const char* chunked : {"0", "1"}) {
    SCOPED_TRACE(chunked);
    const std::string query = std::string("&chunked=") + chunked;
    Result<Response> fits = client->Get("/v1/big?bytes=" + std::to_string(1 << 20) + query);
    ASSERT_TRUE(fits.ok()) << fits.status().ToString();
    EXPECT_EQ(fits->body.size(), size_t{1} << 20);
    Result<Response> over = client->Get("/v1/big?bytes=" + std::to_string((1 << 20) + 1) + query);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), StatusCode::kTooLarge);
    EXPECT_NE(over.status().message().find("larger than 1048576 bytes"), std::string::npos)
        << over.status().ToString();
    Result<Response> far_over = client->Get("/v1/big?bytes=" + std::to_string(8 << 20) + query);
    EXPECT_EQ(far_over.status().code(), StatusCode::kTooLarge);
  }
  // The client still serves the next request.
  EXPECT_EQ(client->Get("/v1/big?bytes=10")->body, BigBody(10));
}

TEST_F(HttpRoundTrip, GracefulShutdownFinishesTheRequestInFlight) {
  StartServer({});
  std::unique_ptr<Client> client = MakeClient();
  Result<Response> slow = Status::Internal("not run");
  std::thread caller([&] { slow = client->Get("/v1/slow?ms=400"); });
  while (!slow_started_.load()) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(server_->in_flight(), 1);
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  const auto took = std::chrono::steady_clock::now() - start;
  caller.join();
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(slow->status, 200);
  EXPECT_EQ(nlohmann::json::parse(slow->body)["slept_ms"], 400);
  EXPECT_GE(took, milliseconds(200));   // It waited for the request...
  EXPECT_LT(took, milliseconds(5000));  // ...and no longer than needed.
  EXPECT_TRUE(server_->shutting_down());
  EXPECT_EQ(server_->in_flight(), 0);
  // No longer accepting.
  ClientOptions options;
  options.max_attempts = 1;
  EXPECT_FALSE(MakeClient(options)->Get("/healthz").ok());
}

TEST_F(HttpRoundTrip, ConcurrentClientsAllServed) {
  ServerOptions options;
  options.worker_threads = 4;
  options.max_queued_connections = 4;
  StartServer(options);
  constexpr int kThreads = 8;
  constexpr int kRequests = 40;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  std::unique_ptr<Client> shared = MakeClient();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequests; ++i) {
        const std::string q = std::to_string(t) + "-" + std::to_string(i);
        Result<Response> r = shared->Get("/v1/echo?q=" + q);
        if (r.ok() && r->status == 200 && nlohmann::json::parse(r->body)["q"] == q) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kRequests);
  const std::string fragment =
      "route=\"/v1/echo\",code=\"200\"} " + std::to_string(kThreads * kRequests);
  EXPECT_NE(ExpositionWith(fragment).find(fragment), std::string::npos);
}

// ---- TLS, with certificates made by the openssl command line tool --------------------------

class HttpTls : public HttpRoundTrip {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("sluice-tls-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    const std::string d = dir_->string();
    const std::string script =
        "set -e; cd " + d +
        "; openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 "
        "-subj /CN=sluice-test-ca 2>/dev/null"
        "; openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
        "-subj /CN=sluice.test 2>/dev/null"
        "; printf 'subjectAltName=DNS:sluice.test,IP:127.0.0.1\\n' > san.ext"
        "; openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out server.crt -days 2 -extfile san.ext 2>/dev/null"
        "; openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
        "-subj /CN=operator 2>/dev/null"
        "; openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out client.crt -days 2 2>/dev/null"
        "; openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.crt -days 2 "
        "-subj /CN=other-ca 2>/dev/null";
    ok_ = std::system(("bash -c \"" + script + "\"").c_str()) == 0;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(ok_) << "the openssl command could not make test certificates (make deps installs "
                        "Debian's openssl)";
  }
  static std::string File(const char* name) { return (*dir_ / name).string(); }
  static std::string Read(const char* name) {
    std::ifstream in(File(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void StartTls(bool require_client_cert) {
    ServerOptions options;
    options.tls = ServerTlsOptions{File("server.crt"), File("server.key"),
                                   require_client_cert ? File("ca.crt") : ""};
    StartServer(options);
  }

  static fs::path* dir_;
  static bool ok_;
};
fs::path* HttpTls::dir_ = nullptr;
bool HttpTls::ok_ = false;

TEST_F(HttpTls, VerifiesTheServerAgainstTheCa) {
  StartTls(false);
  EXPECT_EQ(server_->BaseUrl().rfind("https://", 0), 0u);
  ClientOptions options;
  options.tls.ca_file = File("ca.crt");
  Result<Response> r = MakeClient(options)->Get("/v1/echo?q=tls");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nlohmann::json::parse(r->body)["q"], "tls");

  ClientOptions pem;
  pem.tls.ca_pem = Read("ca.crt");  // kubeconfig's certificate-authority-data.
  r = MakeClient(pem)->Get("/v1/echo?q=pem");
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  ClientOptions wrong_ca;
  wrong_ca.tls.ca_file = File("other.crt");
  wrong_ca.max_attempts = 1;
  r = MakeClient(wrong_ca)->Get("/v1/echo");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("certificate verification failed"), std::string::npos)
      << r.status().ToString();

  ClientOptions insecure;
  insecure.tls.insecure_skip_verify = true;
  EXPECT_TRUE(MakeClient(insecure)->Get("/v1/echo").ok());
}

TEST_F(HttpTls, ServerNameOverrideVerifiesAnotherName) {
  StartTls(false);
  ClientOptions options;
  options.tls.ca_file = File("ca.crt");
  options.tls.server_name = "sluice.test";  // The URL says 127.0.0.1; the cert says both.
  Result<Response> r = MakeClient(options)->Get("/v1/echo?q=sni");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpTls, MutualTlsNeedsAClientCertificate) {
  StartTls(true);
  ClientOptions with_cert;
  with_cert.tls.ca_file = File("ca.crt");
  with_cert.tls.client_cert_file = File("client.crt");
  with_cert.tls.client_key_file = File("client.key");
  Result<Response> r = MakeClient(with_cert)->Get("/v1/echo");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);

  ClientOptions pem;  // kubeconfig's client-certificate-data / client-key-data.
  pem.tls.ca_file = File("ca.crt");
  pem.tls.client_cert_pem = Read("client.crt");
  pem.tls.client_key_pem = Read("client.key");
  EXPECT_EQ(MakeClient(pem)->Get("/v1/echo")->status, 200);

  ClientOptions without;
  without.tls.ca_file = File("ca.crt");
  without.max_attempts = 1;
  EXPECT_FALSE(MakeClient(without)->Get("/v1/echo").ok());
}

TEST_F(HttpTls, BadTlsMaterialIsAClearError) {
  ClientOptions options;
  options.base_url = "https://127.0.0.1:1";
  options.tls.ca_pem = "not a certificate";
  Result<std::unique_ptr<Client>> c = Client::Create(options);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no PEM certificate"), std::string::npos);
  options.tls = {};
  options.tls.client_cert_file = File("client.crt");
  c = Client::Create(options);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("only one"), std::string::npos);
  options.tls.client_key_file = File("server.key");
  c = Client::Create(options);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("does not match"), std::string::npos);

  ServerOptions server_options;
  server_options.tls = ServerTlsOptions{File("missing.crt"), File("missing.key"), ""};
  Server server(server_options, nullptr, logs_.logger);
  Status s = server.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("missing.crt"), std::string::npos);
}

// ---- Resolver hook -------------------------------------------------------------------------

TEST_F(HttpRoundTrip, HostsFileResolverNamesReachTheServer) {
  StartServer({});
  const fs::path hosts = fs::temp_directory_path() / ("sluice-hosts-" + std::to_string(::getpid()));
  {
    std::ofstream out(hosts);
    out << "127.0.0.1 dataflow.default.svc dataflow.default.svc.cluster.local\n";
  }
  ClientOptions options;
  options.base_url = "http://dataflow.default.svc:" + std::to_string(server_->port());
  options.resolver = std::make_shared<HostsFileResolver>(hosts);
  Result<Response> r = MakeClient(options)->Get("/v1/echo?q=dns");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nlohmann::json::parse(r->body)["q"], "dns");
  fs::remove(hosts);
}

}  // namespace
}  // namespace sluice::http

namespace sluice::http {
namespace {

// `ss -ltn` (iproute2) shows a listening socket's accept-queue limit as its Send-Q; -1 when ss
// is missing or the port is not listed.
int ListenBacklogOf(int port) {
  FILE* pipe = popen(("ss -ltnH 'sport = :" + std::to_string(port) + "' 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  std::string out;
  while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  pclose(pipe);
  std::istringstream fields(out);
  std::string state;
  int recv_q = -1, send_q = -1;
  fields >> state >> recv_q >> send_q;
  return state == "LISTEN" ? send_q : -1;
}

TEST_F(HttpRoundTrip, ListenBacklogIsRaisedForBurstsOfConnections) {
  ServerOptions options;
  options.listen_backlog = 128;
  StartServer(options);
  const int backlog = ListenBacklogOf(server_->port());
  ASSERT_GE(backlog, 0) << "ss could not report the backlog (make deps installs Debian's iproute2)";
  std::ifstream somaxconn("/proc/sys/net/core/somaxconn");
  int cap = 4096;
  somaxconn >> cap;
  EXPECT_EQ(backlog, std::min(128, cap));
}

// A second server on a port that a live server holds fails to start, naming the address, and the
// first keeps serving every request: httplib's default SO_REUSEPORT let the second bind it and
// the kernel split connections between the two (a second local cluster on 6443 answered half of
// the first one's requests with its own certificate).
TEST_F(HttpRoundTrip, ASecondServerOnAPortInUseFailsToStart) {
  StartServer(ServerOptions{});
  const int port = server_->port();
  ServerOptions second_options;
  second_options.port = port;
  metrics::Registry second_registry;
  Server second(second_options, &second_registry, logs_.logger);
  const Status started = second.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.message().find("cannot listen on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << started.ToString();
  std::unique_ptr<Client> client = MakeClient(ClientOptions{});
  for (int i = 0; i < 20; ++i) {
    Result<Response> r = client->Get("/v1/echo?q=" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
  }
  // The port is free again once the first server stops: SO_REUSEADDR still lets it be reused.
  server_->Shutdown();
  Server third(second_options, &second_registry, logs_.logger);
  EXPECT_TRUE(third.Start().ok());
  third.Shutdown();
}

// A client-only process (the `sluice` CLI) must survive a write into a connection the peer has
// closed: creating a Client ignores SIGPIPE, so the write fails with EPIPE. Each case runs in a
// re-executed child whose SIGPIPE starts at the default action.
[[noreturn]] void WriteIntoClosedPipe(bool create_client) {
  ::signal(SIGPIPE, SIG_DFL);
  if (create_client) {
    ClientOptions options;
    options.base_url = "http://127.0.0.1:1";
    if (!Client::Create(options).ok()) std::_Exit(2);
  }
  int fds[2];
  if (::pipe(fds) != 0) std::_Exit(3);
  ::close(fds[0]);
  const char byte = 'x';
  const bool epipe = ::write(fds[1], &byte, 1) == -1 && errno == EPIPE;
  std::_Exit(epipe ? 0 : 4);
}

TEST(HttpClientSignals, CreatingAClientTurnsSigpipeIntoEpipe) {
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(WriteIntoClosedPipe(true), testing::ExitedWithCode(0), "");
  // The control: without a client the same write kills the process.
  EXPECT_EXIT(WriteIntoClosedPipe(false), testing::KilledBySignal(SIGPIPE), "");
  GTEST_FLAG_SET(death_test_style, style);
}

}  // namespace
}  // namespace sluice::http
