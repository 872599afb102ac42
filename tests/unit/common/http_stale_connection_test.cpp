// http::Client over a pooled connection that the server has dropped: the request whose write
// fails on it is sent once more on a new connection, whatever its method (the server never
// received it whole), and without counting an attempt. A raw peer scripts the drop.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

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

}  // namespace
}  // namespace sluice::http
