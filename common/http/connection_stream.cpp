#include "common/http/connection_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sluice::http {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

void IpAndPort(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

// The address `get` (getpeername or getsockname) reports for `fd`; empty and 0 when it fails.
void SocketAddress(int fd, int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  port = 0;
  ip.clear();
  if (get(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) IpAndPort(addr, ip, port);
}

int PollFd(int fd, short events, milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout.count(), 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0 && (p.revents & events) == 0) return -1;
    return n;
  }
}

}  // namespace

bool SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

ConnectionStream::ConnectionStream(int fd, SSL* ssl, milliseconds read_timeout,
                                   milliseconds write_timeout)
    : fd_(fd), ssl_(ssl), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

void ConnectionStream::SetReadDeadline(SteadyTime deadline) {
  deadline_ = deadline;
  deadline_passed_ = false;
}

void ConnectionStream::ClearReadDeadline() {
  deadline_.reset();
  deadline_passed_ = false;
}

bool ConnectionStream::HasBufferedInput() const {
  return begin_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0);
}

int ConnectionStream::PollFor(bool readable, milliseconds timeout) const {
  return PollFd(fd_, readable ? POLLIN : POLLOUT, timeout);
}

milliseconds ConnectionStream::ReadWait(bool* deadline_bound) const {
  *deadline_bound = false;
  if (!deadline_) return read_timeout_;
  const auto left = std::chrono::duration_cast<milliseconds>(*deadline_ - Steady::now());
  if (left < read_timeout_) {
    *deadline_bound = true;
    return std::max(left, milliseconds(0));
  }
  return read_timeout_;
}

bool ConnectionStream::AwaitInput(milliseconds timeout, const std::function<bool()>& keep_waiting) {
  const SteadyTime until = Steady::now() + timeout;
  while (keep_waiting()) {
    if (HasBufferedInput()) return true;
    const auto left = std::chrono::duration_cast<milliseconds>(until - Steady::now());
    if (left.count() <= 0) return false;
    const int ready = PollFor(/*readable=*/true, std::min(left, kShutdownCheck));
    if (ready > 0) return true;
    if (ready < 0) return false;
  }
  return false;
}

bool ConnectionStream::is_readable() const {
  if (HasBufferedInput()) return true;
  bool deadline_bound = false;
  return PollFor(/*readable=*/true, ReadWait(&deadline_bound)) > 0;
}

bool ConnectionStream::is_writable() const {
  if (PollFor(/*readable=*/false, write_timeout_) <= 0) return false;
  // A socket whose peer has gone is writable too: peek, as cpp-httplib's own stream does, so
  // that a watch or a log follow notices its client left and gives back its worker.
  if (PollFor(/*readable=*/true, milliseconds(0)) <= 0) return true;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

int ConnectionStream::Fill() {
  begin_ = end_ = 0;
  for (;;) {
    ssize_t n;
    bool want_write = false;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      n = SSL_read(ssl_, buffer_.data(), static_cast<int>(buffer_.size()));
      if (n <= 0) {
        const int err = SSL_get_error(ssl_, static_cast<int>(n));
        if (err == SSL_ERROR_ZERO_RETURN) return 0;  // The peer's close_notify.
        if (err == SSL_ERROR_WANT_WRITE) {
          want_write = true;
        } else if (err != SSL_ERROR_WANT_READ) {
          return -1;  // Closed without close_notify, or a TLS error.
        }
        n = -1;
      }
    } else {
      n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n == 0) return 0;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    }
    if (n > 0) {
      end_ = static_cast<size_t>(n);
      return 1;
    }
    bool deadline_bound = false;
    const milliseconds wait = ReadWait(&deadline_bound);
    if (deadline_bound && wait.count() == 0) {
      deadline_passed_ = true;
      return -1;
    }
    const int ready = PollFor(/*readable=*/!want_write, wait);
    if (ready < 0) return -1;
    if (ready == 0) {
      deadline_passed_ = deadline_bound;
      return -1;
    }
  }
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (begin_ == end_) {
    const int filled = Fill();
    if (filled <= 0) return filled;  // 0: the peer closed; -1: error, timeout or deadline.
  }
  const size_t n = std::min(size, end_ - begin_);
  std::memcpy(ptr, buffer_.data() + begin_, n);
  begin_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (size == 0) return 0;
  for (;;) {
    bool want_read = false;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1u << 30)));
      if (n > 0) return n;
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ) {
        want_read = true;
      } else if (err != SSL_ERROR_WANT_WRITE) {
        return -1;
      }
    } else {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    }
    // SSL_write must be retried with the same arguments; the loop does that.
    if (PollFor(/*readable=*/want_read, write_timeout_) <= 0) return -1;
  }
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  SocketAddress(fd_, ::getpeername, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  SocketAddress(fd_, ::getsockname, ip, port);
}

SSL* AcceptTls(SSL_CTX* ctx, int fd, ConnectionStream::SteadyTime deadline, std::string* error,
               bool* timed_out) {
  *timed_out = false;
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    *error = "cannot create a TLS session";
    SSL_free(ssl);
    return nullptr;
  }
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_accept(ssl);
    if (rc == 1) return ssl;
    const int err = SSL_get_error(ssl, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      const unsigned long code = ERR_get_error();
      char text[256] = "the peer closed the connection";
      if (code != 0) ERR_error_string_n(code, text, sizeof(text));
      *error = std::string("TLS handshake failed: ") + text;
      SSL_free(ssl);
      return nullptr;
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Steady::now());
    if (left.count() <= 0 || PollFd(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, left) <= 0) {
      *error = "the TLS handshake did not finish within the request deadline";
      *timed_out = true;
      SSL_free(ssl);
      return nullptr;
    }
  }
}

}  // namespace sluice::http
