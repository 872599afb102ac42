#include "common/http/bulk_exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/http/response_head.h"

namespace sluice::http {
namespace {

constexpr size_t kHeadReadBytes = 64 << 10;  // Heads are small; the rest of a read is body.
constexpr size_t kMaxHeadBytes = 1 << 20;
constexpr size_t kToEndReadBytes = 1 << 20;  // Reads of a body without Content-Length.
constexpr size_t kBodyStepBytes = 2 << 20;   // Body memory made ready per step.

// Closes the socket when it goes out of scope (after the cancellation hook that uses it).
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// 1: ready; 0: timed out; -1: error (errno).
int WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  const int ms = static_cast<int>(std::min<int64_t>(timeout.count(), 1 << 30));
  while (true) {
    const int rc = ::poll(&p, 1, ms);
    if (rc >= 0) return rc > 0 ? 1 : 0;
    if (errno != EINTR) return -1;
  }
}

std::string ErrnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

class Exchange {
 public:
  Exchange(const BulkExchangeOptions& options, const std::optional<CancellationToken>& cancel,
           BulkExchangeResult* out)
      : options_(options), cancel_(cancel), out_(out) {}

  void Run(std::string_view request) {
    if (Cancelled()) return;
    const int fd = Connect();
    if (fd < 0) return;
    Socket socket(fd);
    CancellationRegistration hook;
    // A blocked poll wakes up when the socket is shut down: cancellation takes effect at once.
    if (cancel_) hook = cancel_->OnCancel([fd] { ::shutdown(fd, SHUT_RDWR); });
    if (Send(fd, request) && ReadHead(fd)) ReadBody(fd);
    hook.Reset();  // Before the socket closes: the hook must never shut down a reused fd.
  }

 private:
  bool Fail(BulkFailure failure, std::string message) {
    out_->failure = failure;
    out_->message = std::move(message);
    return false;
  }

  bool Cancelled() {
    if (!cancel_ || !cancel_->IsCancelled()) return false;
    out_->failure = BulkFailure::kCancelled;
    out_->message = "cancelled";
    return true;
  }

  // The connected socket, or -1 with the failure set.
  int Connect() {
    sockaddr_storage addr{};
    socklen_t len = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
    if (inet_pton(AF_INET, options_.address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(static_cast<uint16_t>(options_.port));
      len = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, options_.address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(static_cast<uint16_t>(options_.port));
      len = sizeof(sockaddr_in6);
    } else {
      Fail(BulkFailure::kConnect, "not a numeric address: \"" + options_.address + "\"");
      return -1;
    }
    const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      Fail(BulkFailure::kConnect, ErrnoText("socket"));
      return -1;
    }
    const auto give_up = [&](BulkFailure failure, std::string message) {
      Fail(failure, std::move(message));
      ::close(fd);
      return -1;
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      if (errno != EINPROGRESS) return give_up(BulkFailure::kConnect, ErrnoText("connect"));
      const int ready = WaitFor(fd, POLLOUT, options_.connect_timeout);
      if (ready == 0) {
        return give_up(BulkFailure::kConnectTimeout,
                       "connect: no answer within " +
                           std::to_string(options_.connect_timeout.count()) + " ms");
      }
      int error = 0;
      socklen_t error_len = sizeof(error);
      if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_len) != 0) {
        return give_up(BulkFailure::kConnect, ErrnoText("connect"));
      }
      if (error != 0) {
        return give_up(BulkFailure::kConnect, std::string("connect: ") + std::strerror(error));
      }
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }

  bool Send(int fd, std::string_view request) {
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        const int ready = WaitFor(fd, POLLOUT, options_.write_timeout);
        if (ready > 0) continue;
        if (Cancelled()) return false;
        return Fail(BulkFailure::kWrite,
                    ready == 0 ? "send: no room within " +
                                     std::to_string(options_.write_timeout.count()) + " ms"
                               : ErrnoText("send"));
      }
      if (Cancelled()) return false;
      return Fail(BulkFailure::kWrite, ErrnoText("send"));
    }
    return true;
  }

  // Reads up to `n` bytes into `dst`, waiting for them: > 0 read, 0 end of stream, -1 failed
  // (the failure set).
  ssize_t Read(int fd, char* dst, size_t n) {
    while (true) {
      const ssize_t got = ::recv(fd, dst, n, 0);
      if (got >= 0) return got;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        if (!Cancelled()) Fail(BulkFailure::kRead, ErrnoText("recv"));
        return -1;
      }
      const int ready = WaitFor(fd, POLLIN, options_.read_timeout);
      if (ready > 0) continue;
      if (Cancelled()) return -1;
      if (ready == 0) {
        Fail(BulkFailure::kReadTimeout,
             "no data within " + std::to_string(options_.read_timeout.count()) + " ms");
      } else {
        Fail(BulkFailure::kRead, ErrnoText("poll"));
      }
      return -1;
    }
  }

  bool ReadHead(int fd) {
    std::string& buf = leftover_;
    std::optional<size_t> end;
    while (!(end = FindHeadEnd(buf))) {
      if (buf.size() >= kMaxHeadBytes)
        return Fail(BulkFailure::kMalformed, "response head over 1 MiB");
      const size_t had = buf.size();
      buf.resize(had + kHeadReadBytes);
      const ssize_t n = Read(fd, buf.data() + had, kHeadReadBytes);
      buf.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n < 0) return false;
      if (n == 0) {
        if (Cancelled()) return false;
        return Fail(BulkFailure::kRead, buf.empty() ? "the server closed the connection without "
                                                      "a response"
                                                    : "the server closed the connection in the "
                                                      "middle of the response head");
      }
    }
    Result<ResponseHead> head = ParseResponseHead(std::string_view(buf).substr(0, *end));
    if (!head.ok()) return Fail(BulkFailure::kMalformed, head.status().message());
    head_ = std::move(*head);
    buf.erase(0, *end);
    out_->got_head = true;
    out_->status = head_.status;
    out_->headers = head_.headers;
    return true;
  }

  bool TooLarge(uint64_t size) {
    return Fail(BulkFailure::kTooLarge, "the response body (" + std::to_string(size) +
                                            " bytes or more) is larger than " +
                                            std::to_string(options_.max_response_bytes) + " bytes");
  }

  bool ReadBody(int fd) {
    std::string& body = out_->body;
    if (head_.NoBody()) return true;
    if (head_.chunked) {
      return Fail(BulkFailure::kMalformed,
                  "a chunked response; this reader takes bodies framed by Content-Length");
    }
    if (head_.content_length) {
      const uint64_t length = *head_.content_length;
      if (length > options_.max_response_bytes) return TooLarge(length);
      if (leftover_.size() > length) {
        return Fail(BulkFailure::kMalformed, "more bytes than the Content-Length");
      }
      body.clear();
      body.reserve(static_cast<size_t>(length));
      body.append(leftover_);
      size_t got = body.size();
      const auto total = static_cast<size_t>(length);
      while (got < total) {
        // The memory is made ready (faulted in, zeroed) a piece at a time just ahead of the
        // reads, while the server is still sending: in one go up front it would delay the
        // first read by the whole body's page faults.
        if (body.size() - got < kBodyStepBytes / 2) {
          body.resize(std::min(total, body.size() + kBodyStepBytes));
        }
        const ssize_t n = Read(fd, body.data() + got, body.size() - got);
        if (n < 0) return false;
        if (n == 0) {
          if (Cancelled()) return false;
          return Fail(BulkFailure::kRead, "the server closed the connection after " +
                                              std::to_string(got) + " of " +
                                              std::to_string(length) + " body bytes");
        }
        got += static_cast<size_t>(n);
      }
      return true;
    }
    // No length: the body runs to the end of the connection (the request said close).
    body = std::move(leftover_);
    if (body.size() > options_.max_response_bytes) return TooLarge(body.size());
    while (true) {
      const size_t had = body.size();
      body.resize(had + kToEndReadBytes);
      const ssize_t n = Read(fd, body.data() + had, kToEndReadBytes);
      body.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n < 0) return false;
      if (n == 0) return !Cancelled();
      if (body.size() > options_.max_response_bytes) return TooLarge(body.size());
    }
  }

  const BulkExchangeOptions& options_;
  const std::optional<CancellationToken>& cancel_;
  BulkExchangeResult* out_;
  std::string leftover_;  // Bytes read past the head: the body's start.
  ResponseHead head_;
};

}  // namespace

BulkExchangeResult BulkExchange(const BulkExchangeOptions& options, std::string_view request,
                                const std::optional<CancellationToken>& cancel) {
  BulkExchangeResult out;
  Exchange(options, cancel, &out).Run(request);
  if (out.failure != BulkFailure::kNone) out.body.clear();
  return out;
}

}  // namespace sluice::http
