// DeadlineServer and DeadlineSslServer: cpp-httplib's plain and TLS servers with Sluice's own
// connection loop, which bounds the time a client may take to send a request and refuses
// connections the worker pool has no room for.
//
// - Request deadline: from the moment a request's first byte arrives, its head and body must be
//   in within `request_deadline`; otherwise the server answers 408 and closes the connection.
//   A TLS handshake has a deadline of the same length of its own. cpp-httplib's read timeout alone
//   resets on every byte, so a client dripping a header line a second held a worker thread
//   indefinitely. Handlers run after their request has been read, so the deadline never cuts a long
//   poll or a stream short.
// - Refusal: a connection that BoundedTaskQueue hands over as a refusal (its queue was full) is
//   answered `503` with `Retry-After` and the header kRequestUnreadHeader, without reading the
//   request, and closed once the client has finished sending (bounded by kRefusalLinger; at once
//   when the server is stopping).
//   Clients may resend such a request whatever its method: the server never read it.
//
// The classes only replace cpp-httplib's per-connection loop; routing, parsing and handlers are
// cpp-httplib's (through its protected process_request).
//
// Thread safety: as httplib::Server; the hooks run on the serving threads, concurrently.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>

namespace sluice::http {

// The response header that marks a request refused before it was read.
inline constexpr char kRequestUnreadHeader[] = "Sluice-Request-Unread";

// How long a refused connection is kept to send the 503 and read off what the client sends
// (one thread answers refusals in turn, so it is short).
inline constexpr std::chrono::milliseconds kRefusalLinger{500};

struct ConnectionPolicy {
  std::chrono::milliseconds read_timeout{30000};   // Longest wait for any one read.
  std::chrono::milliseconds write_timeout{30000};  // Longest wait for room to write.
  std::chrono::milliseconds keep_alive_timeout{2000};
  size_t keep_alive_max_requests = 10000;
  std::chrono::milliseconds request_deadline{30000};  // Head and body of one request.
  std::chrono::seconds refusal_retry_after{1};        // Retry-After of a refusal's 503.
  // Called after a connection was answered 408 or dropped for its deadline, with the peer's IP.
  std::function<void(const std::string& remote_ip)> on_deadline;
  // Called after a connection was refused with 503, with the peer's IP.
  std::function<void(const std::string& remote_ip)> on_refused;
};

// True while the calling thread reads a request whose deadline has passed (for the server's
// error handler, which turns cpp-httplib's 400 for an unfinished request into a 408).
bool CurrentRequestMissedDeadline();

class DeadlineServer final : public httplib::Server {
 public:
  explicit DeadlineServer(ConnectionPolicy policy) : policy_(std::move(policy)) {}

 private:
  bool process_and_close_socket(socket_t sock) override;

  ConnectionPolicy policy_;
};

class DeadlineSslServer final : public httplib::SSLServer {
 public:
  // As httplib::SSLServer; `client_ca_file` may be null (no client certificates).
  DeadlineSslServer(const char* cert_file, const char* key_file, const char* client_ca_file,
                    ConnectionPolicy policy)
      : httplib::SSLServer(cert_file, key_file, client_ca_file), policy_(std::move(policy)) {}

 private:
  bool process_and_close_socket(socket_t sock) override;

  ConnectionPolicy policy_;
};

}  // namespace sluice::http
