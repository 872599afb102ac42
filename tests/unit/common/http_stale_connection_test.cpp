// http::Client over a pooled connection that the server has dropped: the request whose write
// fails on it is sent once more on a new connection, whatever its method (the server never
// received it whole), and without counting an attempt; not on another pooled one, which the
// server has likely dropped too. Pooled connections idle past max_idle_time are not reused.
// Raw peers script the drops.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "tests/support/loopback_listener.h"

namespace sluice::http {
namespace {

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

// Connection 1: answers the first request and keeps the connection, then resets it (as a
// server closing an idle connection does) while the second request is still being written.
// Connection 2: answers one request with 201.
class DroppingPeer {
 public:
  DroppingPeer() {
    thread_ = std::thread([this] {
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      const std::string created = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
      for (int n = 1;; ++n) {
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        if (c < 0) return;
        connections_.fetch_add(1);
        if (n == 1) {
          if (ReadRequest(c)) (void)::send(c, ok.data(), ok.size(), MSG_NOSIGNAL);
          char head[1024];
          (void)::recv(c, head, sizeof(head), 0);  // The start of the second request.
          linger reset{1, 0};
          ::setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        } else if (ReadRequest(c)) {
          (void)::send(c, created.data(), created.size(), MSG_NOSIGNAL);
        }
        ::close(c);
      }
    });
  }
  ~DroppingPeer() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  int connections() const { return connections_.load(); }

 private:
  test_support::LoopbackListener listener_;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

TEST(HttpStaleConnectionTest, APostWhoseWriteFailsOnAPooledConnectionIsSentOnANewOne) {
  DroppingPeer peer;
  ClientOptions options;
  options.base_url = peer.url();
  options.max_attempts = 1;  // No ordinary retries: only the resend on a new connection.
  std::unique_ptr<Client> client = Client::Create(options).value();
  Result<Response> first = client->Post("/v1/events", "{}", "application/json");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  // Larger than the socket buffers, so the write is still going when the peer resets.
  const std::string body(32u << 20, 'x');
  Result<Response> second = client->Post("/v1/events", body, "application/octet-stream");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 201);
  EXPECT_EQ(peer.connections(), 2);
}

// Connections 1 and 2: each answers one request (both at once, once both are open, so that the
// client pools two connections) and then resets while the next request is being written.
// Later connections answer each request with 201. One thread per connection.
class TwiceDroppingPeer {
 public:
  TwiceDroppingPeer() {
    thread_ = std::thread([this] {
      for (int n = 1;; ++n) {
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        if (c < 0) return;
        connections_.fetch_add(1);
        handlers_.emplace_back([this, c, n] { Serve(c, n); });
      }
    });
  }
  ~TwiceDroppingPeer() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
    for (std::thread& t : handlers_) t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  int connections() const { return connections_.load(); }

 private:
  void Serve(int c, int n) {
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    const std::string created = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    if (n <= 2) {
      const bool got = ReadRequest(c);
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++answered_;
        cv_.notify_all();
        cv_.wait(lock, [&] { return answered_ >= 2; });
      }
      if (got) (void)::send(c, ok.data(), ok.size(), MSG_NOSIGNAL);
      char head[1024];
      (void)::recv(c, head, sizeof(head), 0);
      linger reset{1, 0};
      ::setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    } else {
      while (ReadRequest(c)) (void)::send(c, created.data(), created.size(), MSG_NOSIGNAL);
    }
    ::close(c);
  }

  test_support::LoopbackListener listener_;
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int answered_ = 0;
  std::vector<std::thread> handlers_;  // Touched by thread_ only, then joined after it.
  std::thread thread_;
};

TEST(HttpStaleConnectionTest, TheResendTakesANewConnectionNotAnotherPooledOne) {
  TwiceDroppingPeer peer;
  ClientOptions options;
  options.base_url = peer.url();
  options.max_attempts = 1;
  std::unique_ptr<Client> client = Client::Create(options).value();
  // Two requests at once leave two pooled connections.
  Result<Response> a = Status::Internal("unset");
  std::thread other([&] { a = client->Post("/v1/events", "{}", "application/json"); });
  Result<Response> b = client->Post("/v1/events", "{}", "application/json");
  other.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(peer.connections(), 2);
  const std::string body(32u << 20, 'x');
  Result<Response> event = client->Post("/v1/events", body, "application/octet-stream");
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(event->status, 201);
  EXPECT_EQ(peer.connections(), 3);
}

// Answers every request on every connection with 200; counts connections.
class CountingPeer {
 public:
  CountingPeer() {
    thread_ = std::thread([this] {
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      for (;;) {
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        if (c < 0) return;
        connections_.fetch_add(1);
        handlers_.emplace_back([c, ok] {
          while (ReadRequest(c)) (void)::send(c, ok.data(), ok.size(), MSG_NOSIGNAL);
          ::close(c);
        });
      }
    });
  }
  ~CountingPeer() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
    for (std::thread& t : handlers_) t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  int connections() const { return connections_.load(); }

 private:
  test_support::LoopbackListener listener_;
  std::atomic<int> connections_{0};
  std::vector<std::thread> handlers_;
  std::thread thread_;
};

TEST(HttpStaleConnectionTest, APooledConnectionIdlePastMaxIdleTimeIsNotReused) {
  CountingPeer peer;
  FakeClock clock;
  ClientOptions options;
  options.base_url = peer.url();
  options.clock = &clock;
  options.max_idle_time = std::chrono::milliseconds(1000);
  {
    std::unique_ptr<Client> client = Client::Create(options).value();
    ASSERT_TRUE(client->Get("/a").ok());
    clock.Advance(std::chrono::milliseconds(1000));  // Idle exactly max_idle_time: reused.
    ASSERT_TRUE(client->Get("/b").ok());
    EXPECT_EQ(peer.connections(), 1);
    clock.Advance(std::chrono::milliseconds(1001));  // Past it: closed, a new one opened.
    ASSERT_TRUE(client->Get("/c").ok());
    EXPECT_EQ(peer.connections(), 2);
  }  // Closes the pooled connection, so that the peer's handler ends.
}

}  // namespace
}  // namespace sluice::http
