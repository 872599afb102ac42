// http::Client over pooled keep-alive connections that the server has closed. The request whose
// write fails on one is sent once more on a new connection, whatever its method (the server never
// received it whole), and without counting an attempt; not on another pooled connection, which
// the server has likely closed too. Pooled connections idle past max_idle_time are not reused.
// Raw peers script the drops; an HTTPS server shows the case that lost an operator's event (a
// POST) in CI: a TLS connection the server has closed still looks alive to the client (the
// server's close_notify is readable data), so every pooled one fails after a pause.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "tests/support/loopback_listener.h"

namespace sluice::http {
namespace http_stale_connection_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
constexpr char kCreated[] = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";

// Reads one request (head and Content-Length body) from `c`; false when the peer went away.
bool ReadRequest(int c) {
  std::string got;
  char buf[65536];
  size_t need = std::string::npos;
  while (need == std::string::npos || got.size() < need) {
    const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    got.append(buf, static_cast<size_t>(n));
    const size_t end = got.find("\r\n\r\n");
    if (need == std::string::npos && end != std::string::npos) {
      const size_t at = got.find("Content-Length: ");
      const size_t length =
          at == std::string::npos ? 0 : std::strtoull(got.c_str() + at + 16, nullptr, 10);
      need = end + 4 + length;
    }
  }
  return true;
}

void Send(int c, const char* reply) { (void)::send(c, reply, std::strlen(reply), MSG_NOSIGNAL); }

// Waits for the start of the next request on `c`, then resets the connection (as a server closing
// an idle connection does) while the request is still being written.
void ResetOnNextRequest(int c) {
  char head[1024];
  (void)::recv(c, head, sizeof(head), 0);
  linger reset{1, 0};
  ::setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
}

// A raw HTTP peer on loopback: `serve(fd, n)` handles the n-th accepted connection (from 1) on a
// thread of its own; the peer closes the connection after it.
class ScriptedPeer {
 public:
  explicit ScriptedPeer(std::function<void(int, int)> serve) : serve_(std::move(serve)) {
    thread_ = std::thread([this] {
      for (int n = 1;; ++n) {
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        if (c < 0) return;
        connections_.fetch_add(1);
        handlers_.emplace_back([this, c, n] {
          serve_(c, n);
          ::close(c);
        });
      }
    });
  }
  ~ScriptedPeer() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
    for (std::thread& t : handlers_) t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  int connections() const { return connections_.load(); }

 private:
  std::function<void(int, int)> serve_;
  test_support::LoopbackListener listener_;
  std::atomic<int> connections_{0};
  std::vector<std::thread> handlers_;  // Touched by thread_ only, then joined after it.
  std::thread thread_;
};

std::unique_ptr<Client> ClientOf(const std::string& url) {
  ClientOptions options;
  options.base_url = url;
  options.max_attempts = 1;  // No ordinary retries: only the resend on a new connection.
  options.max_idle_time = milliseconds(60000);  // Keep the dropped connections pooled.
  return Client::Create(options).value();
}

// Two POSTs at once, which leave two pooled connections (when the server answers them together).
void PostTwiceAtOnce(Client& client) {
  Result<Response> a = Status::Internal("unset");
  std::thread other([&] { a = client.Post("/v1/events", "{}", "application/json"); });
  Result<Response> b = client.Post("/v1/events", "{}", "application/json");
  other.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
}

// A POST larger than the socket buffers, so its write is still going when a peer resets.
Result<Response> PostLarge(Client& client) {
  return client.Post("/v1/events", std::string(32u << 20, 'x'), "application/octet-stream");
}

TEST(HttpStaleConnectionTest, APostWhoseWriteFailsOnAPooledConnectionIsSentOnANewOne) {
  // Connection 1 answers a request, then resets during the next; later ones answer with 201.
  ScriptedPeer peer([](int c, int n) {
    if (n == 1) {
      if (ReadRequest(c)) Send(c, kOk);
      ResetOnNextRequest(c);
    } else if (ReadRequest(c)) {
      Send(c, kCreated);
    }
  });
  std::unique_ptr<Client> client = ClientOf(peer.url());
  Result<Response> first = client->Post("/v1/events", "{}", "application/json");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  Result<Response> second = PostLarge(*client);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 201);
  EXPECT_EQ(peer.connections(), 2);
}

TEST(HttpStaleConnectionTest, TheResendTakesANewConnectionNotAnotherPooledOne) {
  // Connections 1 and 2 answer one request each, together (so that the client pools both), then
  // reset during the next; later ones answer every request with 201.
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  ScriptedPeer peer([&](int c, int n) {
    if (n <= 2) {
      const bool got = ReadRequest(c);
      {
        std::unique_lock<std::mutex> lock(mu);
        ++answered;
        cv.notify_all();
        cv.wait(lock, [&] { return answered >= 2; });
      }
      if (got) Send(c, kOk);
      ResetOnNextRequest(c);
    } else {
      while (ReadRequest(c)) Send(c, kCreated);
    }
  });
  std::unique_ptr<Client> client = ClientOf(peer.url());
  ASSERT_NO_FATAL_FAILURE(PostTwiceAtOnce(*client));
  ASSERT_EQ(peer.connections(), 2);
  Result<Response> event = PostLarge(*client);
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(event->status, 201);
  EXPECT_EQ(peer.connections(), 3);
}

TEST(HttpStaleConnectionTest, APooledConnectionIdlePastMaxIdleTimeIsNotReused) {
  ScriptedPeer peer([](int c, int) {
    while (ReadRequest(c)) Send(c, kOk);
  });
  FakeClock clock;
  ClientOptions options;
  options.base_url = peer.url();
  options.clock = &clock;
  options.max_idle_time = milliseconds(1000);
  {
    std::unique_ptr<Client> client = Client::Create(options).value();
    ASSERT_TRUE(client->Get("/a").ok());
    clock.Advance(milliseconds(1000));  // Idle exactly max_idle_time: reused.
    ASSERT_TRUE(client->Get("/b").ok());
    EXPECT_EQ(peer.connections(), 1);
    clock.Advance(milliseconds(1001));  // Past it: closed, a new one opened.
    ASSERT_TRUE(client->Get("/c").ok());
    EXPECT_EQ(peer.connections(), 2);
  }  // Closes the pooled connection, so that the peer's handler ends.
}

// A self-signed certificate for 127.0.0.1, made by the openssl command line tool.
class SelfSignedCert {
 public:
  SelfSignedCert()
      : dir_(fs::temp_directory_path() / ("sluice-keepalive-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    const std::string script =
        "cd " + dir_.string() +
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null";
    ok_ = std::system(script.c_str()) == 0;
  }
  ~SelfSignedCert() { fs::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }

 private:
  fs::path dir_;
  bool ok_ = false;
};

// POST /v1/events answers once `together` requests are in the handler at once (so that the client
// holds that many connections), and records each request's client port (its connection).
class EventServer {
 public:
  EventServer(const SelfSignedCert& cert, int together) : together_(together) {
    ServerOptions options;
    options.tls = ServerTlsOptions{cert.cert(), cert.key(), ""};
    options.keep_alive_timeout = std::chrono::seconds(1);
    options.worker_threads = 4;
    server_ = std::make_unique<Server>(
        std::move(options), &registry_,
        log::Logger("test", SystemClock::Instance(), [](std::string_view) {}));
    server_->Post("/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      ports_.insert(req.remote_port);
      ++arrived_;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(5), [&] { return arrived_ >= together_; });
      ReplyJson(res, {{"ok", true}}, 201);
    });
  }
  ~EventServer() { server_->Shutdown(); }
  Status Start() { return server_->Start(); }
  std::string url() const { return server_->BaseUrl(); }
  size_t connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return ports_.size();
  }

 private:
  metrics::Registry registry_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> ports_;
  int arrived_ = 0;
  const int together_;
};

TEST(HttpStaleConnectionTest, APostAfterTheServerClosedEveryPooledConnectionIsSentOnANewOne) {
  SelfSignedCert cert;
  ASSERT_TRUE(cert.ok()) << "the openssl command could not make a test certificate";
  EventServer server(cert, 2);
  ASSERT_TRUE(server.Start().ok());
  ClientOptions options;
  options.base_url = server.url();
  options.tls.insecure_skip_verify = true;
  options.max_attempts = 1;  // No ordinary retries: only the resend on a new connection.
  options.max_idle_time = milliseconds(60000);  // Keep the closed connections pooled.
  std::unique_ptr<Client> client = Client::Create(options).value();
  ASSERT_NO_FATAL_FAILURE(PostTwiceAtOnce(*client));
  ASSERT_EQ(server.connections(), 2u);
  // The server's keep-alive timer closes both (1 s); nothing observable says when but time.
  std::this_thread::sleep_for(milliseconds(1800));
  Result<Response> event = client->Post("/v1/events", "{}", "application/json");
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(event->status, 201);
  EXPECT_EQ(server.connections(), 3u);
}

}  // namespace http_stale_connection_test
}  // namespace sluice::http
