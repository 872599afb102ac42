// Test helper: loopback TCP ports that are free now, for tests that must name a port before
// something listens on it (a server or a child process started with --port) and for tests that
// need a port nothing listens on.
//
//   FreePort()         one port.
//   FreePorts(n)       n distinct ports.
//   FreePortPair()     a port N with N + 1 free too (a program that also takes the next port).
//
// A port is probed by binding 127.0.0.1 and released before the call returns, so another process
// may take it first, and a later probe may hand out the same port again. FreePorts therefore
// holds all its probes until every port is drawn (the kernel gives no port to two bound sockets
// at once), and FreePortPair takes the ports already drawn as `avoid`. A failed probe yields 0,
// which the caller's own bind or connect then reports.
//
// Thread safety: every call uses its own sockets.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::test_support {

namespace free_port_detail {

// A TCP socket bound to 127.0.0.1:`port` (0: one the kernel picks) while it lives; port() is 0
// when the bind failed.
class Probe {
 public:
  explicit Probe(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    socklen_t len = sizeof(addr);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    port_ = ntohs(addr.sin_port);
  }
  ~Probe() {
    if (fd_ >= 0) ::close(fd_);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  Probe(Probe&& other) noexcept : fd_(other.fd_), port_(other.port_) { other.fd_ = -1; }
  Probe& operator=(Probe&&) = delete;

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace free_port_detail

// A loopback port free now (bound to port 0, then released); 0 when no socket could be bound.
inline int FreePort() { return free_port_detail::Probe(0).port(); }

// `count` loopback ports, free now and distinct: all are probed before any is released.
inline std::vector<int> FreePorts(size_t count) {
  std::vector<free_port_detail::Probe> probes;
  probes.reserve(count);
  std::vector<int> ports;
  ports.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    probes.emplace_back(0);
    ports.push_back(probes.back().port());
  }
  return ports;
}

// A port N such that N and N + 1 are both free now and neither is in `avoid` (ports the test
// drew earlier, which are released and so may come back). After 100 unlucky draws, falls back
// to FreePort().
inline int FreePortPair(const std::vector<int>& avoid = {}) {
  const auto avoided = [&](int port) {
    return std::find(avoid.begin(), avoid.end(), port) != avoid.end();
  };
  for (int attempt = 0; attempt < 100; ++attempt) {
    const free_port_detail::Probe first(0);
    const int port = first.port();
    if (port <= 0 || port >= 65535 || avoided(port) || avoided(port + 1)) continue;
    if (free_port_detail::Probe(port + 1).port() == port + 1) return port;
  }
  return FreePort();
}

}  // namespace sluice::test_support
