// Test helper: loopback TCP ports that are free now, for tests that must name a port before
// something listens on it (a server or a child process started with --port) and for tests that
// need a port nothing listens on.
//
//   FreePort()         one port.
//   FreePorts(n)       n distinct ports.
//   FreePortPair()     a port N with N + 1 free too (a program that also takes the next port).
//
// Why not let the kernel pick (bind port 0): it picks from the ephemeral range, the same range
// every outgoing connection takes its source port from. Between the probe and the child's own
// bind, any connection made by a parallel test (kubectl, pods, probes) could take the port; CI
// saw an operator fail to listen that way. So ports are drawn at random below the ephemeral
// range (from kFirstPort), where no connection's source port lands.
//
// Two test processes could still draw the same port before either binds it. Each drawn port is
// therefore also reserved for the life of the drawing process with an flock on
// $TMPDIR/sluice-test-ports/<port> (the kernel drops the lock when the process exits, even on a
// crash), and a port another process holds is skipped. A port is also probed by binding
// 127.0.0.1 and released before the call returns. A failed draw yields a kernel-picked port,
// and a failed probe yields 0, which the caller's own bind or connect then reports.
//
// Thread safety: the calls may run on any thread; the reservation list is guarded by a mutex.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace sluice::test_support {

namespace free_port_detail {

// Below this the well-known and registered defaults sit (the local cluster's 6443, 9090,
// 10250, 18080): tests never draw them.
constexpr int kFirstPort = 20000;

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

// The first port of the kernel's ephemeral range (net.ipv4.ip_local_port_range), 32768 when
// unreadable.
inline int EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (in >> low && low > 0) return low;
  return 32768;
}

// Process-wide state: the generator and the lock files this process holds.
struct Reservations {
  std::mutex mu;
  std::mt19937 rng{static_cast<uint32_t>(
      ::getpid() ^ std::chrono::steady_clock::now().time_since_epoch().count())};
  std::vector<int> held_fds;  // open until the process exits: the locks live as long
  std::vector<int> ports;     // drawn by this process, never handed out twice
};

inline Reservations& State() {
  static Reservations* state = new Reservations();  // leaked: the locks must outlive statics
  return *state;
}

// Takes the cross-process lock on `port`; false when another process holds it. Caller holds mu.
inline bool Reserve(Reservations& s, int port) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sluice-test-ports";
  ::mkdir(dir.c_str(), 0777);
  ::chmod(dir.c_str(), 0777);  // shared by every user's tests; mkdir's mode is cut by umask
  const std::string path = dir + "/" + std::to_string(port);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return true;  // no lock directory: the bind probe alone decides
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  s.held_fds.push_back(fd);
  return true;
}

// A port at or above kFirstPort and below the ephemeral range, free now, not drawn before by
// this process, not in `avoid`, with `next` more ports after it equally free; reserved for the
// process. 0 when none was found in 2000 draws.
inline int Draw(const std::vector<int>& avoid, int next) {
  Reservations& s = State();
  const std::lock_guard<std::mutex> lock(s.mu);
  const int high = EphemeralLow() - next;  // exclusive
  if (high - kFirstPort < 1000) return 0;
  std::uniform_int_distribution<int> pick(kFirstPort, high - 1);
  const auto taken = [&](int port) {
    return std::find(avoid.begin(), avoid.end(), port) != avoid.end() ||
           std::find(s.ports.begin(), s.ports.end(), port) != s.ports.end();
  };
  for (int attempt = 0; attempt < 2000; ++attempt) {
    const int port = pick(s.rng);
    bool usable = true;
    for (int p = port; p <= port + next && usable; ++p) {
      usable = !taken(p) && Probe(p).port() == p;
    }
    if (!usable) continue;
    for (int p = port; p <= port + next && usable; ++p) usable = Reserve(s, p);
    if (!usable) continue;  // the ports it did lock stay held, harmlessly
    for (int p = port; p <= port + next; ++p) s.ports.push_back(p);
    return port;
  }
  return 0;
}

}  // namespace free_port_detail

// A loopback port free now; 0 when no socket could be bound.
inline int FreePort() {
  const int port = free_port_detail::Draw({}, 0);
  return port != 0 ? port : free_port_detail::Probe(0).port();
}

// `count` loopback ports, free now and distinct.
inline std::vector<int> FreePorts(size_t count) {
  std::vector<int> ports;
  ports.reserve(count);
  for (size_t i = 0; i < count; ++i) ports.push_back(FreePort());
  return ports;
}

// A port N such that N and N + 1 are both free now and neither is in `avoid` (ports drawn
// elsewhere). Falls back to FreePort() when no pair is found.
inline int FreePortPair(const std::vector<int>& avoid = {}) {
  const int port = free_port_detail::Draw(avoid, 1);
  return port != 0 ? port : FreePort();
}

}  // namespace sluice::test_support
