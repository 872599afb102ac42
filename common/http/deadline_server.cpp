#include "common/http/deadline_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "common/http/bounded_task_queue.h"
#include "common/http/connection_stream.h"
#include "common/http/json_body.h"

namespace sluice::http {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Runs one request on `strm`: cpp-httplib's process_request, reached through the server class.
using ProcessFn = std::function<bool(httplib::Stream& strm, bool close_connection,
                                     bool& connection_closed, SSL* ssl)>;

thread_local const ConnectionStream* t_stream = nullptr;

// How long a connection answered 408 is kept to read off what its client still sends.
constexpr std::chrono::milliseconds kTimeoutLinger{200};

bool WriteAll(ConnectionStream& strm, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = strm.write(bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A whole response with a JSON error body, for answers written outside cpp-httplib's routing.
std::string ErrorResponse(int code, const char* reason_phrase, nlohmann::json body,
                          const std::string& extra_headers) {
  const std::string text = body.dump();
  return "HTTP/1.1 " + std::to_string(code) + " " + reason_phrase +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\n" + extra_headers + "Connection: close\r\n\r\n" + text;
}

std::string RemoteIp(const ConnectionStream& strm) {
  std::string ip;
  int port = 0;
  strm.get_remote_ip_and_port(ip, port);
  return ip;
}

// Stops writing, then reads off what the client still sends until it closes or `linger` passes,
// so that closing does not reset the connection before the client has read the answer (a reset
// can discard data the client has not read yet).
void CloseGently(int fd, SSL* ssl, ConnectionStream& strm, std::chrono::milliseconds linger) {
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
  } else {
    ::shutdown(fd, SHUT_WR);
  }
  strm.SetReadDeadline(Steady::now() + linger);
  char sink[4096];
  while (strm.read(sink, sizeof(sink)) > 0) {
  }
}

// Answers a connection the worker pool had no room for: 503 at once, without reading the
// request. One refusal thread answers them in turn, so each is kept at most kRefusalLinger, and
// not at all once the server is stopping.
void Refuse(int fd, SSL_CTX* tls, const ConnectionPolicy& policy, bool stopping) {
  const auto until = Steady::now() + kRefusalLinger;
  SSL* ssl = nullptr;
  if (tls != nullptr) {
    if (stopping) return;
    std::string error;
    bool timed_out = false;
    ssl = AcceptTls(tls, fd, until, &error, &timed_out);
    if (ssl == nullptr) return;
  }
  ConnectionStream strm(fd, ssl, kRefusalLinger, kRefusalLinger);
  const std::string remote = RemoteIp(strm);  // While the peer is still connected.
  const int64_t after = std::max<int64_t>(policy.refusal_retry_after.count(), 1);
  nlohmann::json body = ErrorJson(
      Status::Unavailable("the server is serving as many connections as it can; retry after " +
                          std::to_string(after) + " s"));
  WriteAll(strm, ErrorResponse(503, "Service Unavailable", std::move(body),
                               "Retry-After: " + std::to_string(after) + "\r\n" +
                                   kRequestUnreadHeader + ": true\r\n"));
  CloseGently(fd, ssl, strm, stopping ? std::chrono::milliseconds(0) : kRefusalLinger);
  if (policy.on_refused) policy.on_refused(remote);
  SSL_free(ssl);
}

void AnswerTimeout(ConnectionStream& strm, const ConnectionPolicy& policy) {
  nlohmann::json body =
      ErrorJson(Status::DeadlineExceeded("the request was not received within " +
                                         std::to_string(policy.request_deadline.count()) + " ms"));
  body["error"]["code"] = 408;
  body["error"]["reason"] = "RequestTimeout";
  WriteAll(strm, ErrorResponse(408, "Request Timeout", std::move(body), ""));
}

// The connection loop: keep-alive waits, one request deadline per request, TLS when `tls`.
bool ServeConnection(int fd, SSL_CTX* tls, const ConnectionPolicy& policy,
                     const std::atomic<socket_t>& listening, const ProcessFn& process) {
  if (!SetNonBlocking(fd)) return false;
  const std::function<bool()> keep_waiting = [&] { return listening.load() != INVALID_SOCKET; };
  if (BoundedTaskQueue::RunningAsRefusal()) {
    Refuse(fd, tls, policy, /*stopping=*/!keep_waiting());
    return false;
  }
  ConnectionStream plain(fd, nullptr, policy.read_timeout, policy.write_timeout);
  if (!plain.AwaitInput(policy.keep_alive_timeout, keep_waiting)) return false;
  SSL* ssl = nullptr;
  if (tls != nullptr) {
    const auto deadline = Steady::now() + policy.request_deadline;
    std::string error;
    bool timed_out = false;
    ssl = AcceptTls(tls, fd, deadline, &error, &timed_out);
    if (ssl == nullptr) {
      if (timed_out && policy.on_deadline) policy.on_deadline(RemoteIp(plain));
      return false;
    }
  }
  ConnectionStream strm(fd, ssl, policy.read_timeout, policy.write_timeout);
  t_stream = &strm;
  bool ok = false;
  // The first request's first byte is in already (over TLS, the handshake's was); every other
  // request's first byte is waited for up to the keep-alive timeout, and its deadline starts
  // when it comes.
  for (size_t left = std::max<size_t>(policy.keep_alive_max_requests, 1), served = 0;
       left > 0 && keep_waiting(); --left, ++served) {
    if ((served > 0 || ssl != nullptr) &&
        !strm.AwaitInput(policy.keep_alive_timeout, keep_waiting)) {
      break;
    }
    strm.SetReadDeadline(Steady::now() + policy.request_deadline);
    bool closed = false;
    ok = process(strm, /*close_connection=*/left == 1, closed, ssl);
    if (strm.read_deadline_passed()) {
      // Only an unfinished request line leaves no answer (cpp-httplib gives up silently); an
      // unfinished head or body was answered by the error handler (CurrentRequestMissedDeadline).
      const std::string remote = RemoteIp(strm);
      if (!ok) AnswerTimeout(strm, policy);
      CloseGently(fd, ssl, strm, kTimeoutLinger);
      if (policy.on_deadline) policy.on_deadline(remote);
      ok = false;
      break;
    }
    if (!ok || closed) break;
  }
  t_stream = nullptr;
  if (ssl != nullptr) {
    if (ok) SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  return ok;
}

}  // namespace

bool CurrentRequestMissedDeadline() {
  return t_stream != nullptr && t_stream->read_deadline_passed();
}

bool DeadlineServer::process_and_close_socket(socket_t sock) {
  const bool ok = ServeConnection(
      sock, nullptr, policy_, svr_sock_,
      [this](httplib::Stream& strm, bool close_connection, bool& connection_closed, SSL*) {
        return process_request(strm, close_connection, connection_closed, nullptr);
      });
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

bool DeadlineSslServer::process_and_close_socket(socket_t sock) {
  const bool ok = ServeConnection(
      sock, ssl_context(), policy_, svr_sock_,
      [this](httplib::Stream& strm, bool close_connection, bool& connection_closed, SSL* ssl) {
        return process_request(strm, close_connection, connection_closed,
                               [ssl](httplib::Request& req) { req.ssl = ssl; });
      });
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace sluice::http
