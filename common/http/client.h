// Client: the HTTP(S) client every Sluice component uses to talk to its peers and to the
// Kubernetes API.
//
// - Connection reuse: a small pool of keep-alive connections to one base URL, so concurrent
//   callers do not serialise on one socket and sequential calls do not reconnect.
// - Timeouts: connect, read and write, per client; a stalled stream fails after read_timeout.
// - Retries with exponential backoff and jitter (backoff.h), only where repeating is safe:
//   idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS) or a request marked idempotent (a
//   submit keyed by task id); on connection failures and 502/503/504. A 429, and a 503 that
//   says the request was never read (kRequestUnreadHeader, a full server's refusal), are retried
//   for any method (the server refused without acting), honouring Retry-After. A request whose
//   write fails on a pooled keep-alive connection (the server closed it while idle) is sent once
//   more on a new connection, whatever its method and without counting an attempt: the server never
//   received it whole. Pooled connections are not kept past max_idle_time, below the servers'
//   keep-alive timeout, so that a request rarely meets a connection the server is closing.
// - Bearer token from a TokenSource (re-read when its file rotates).
// - TLS through OpenSSL: CA bundle (file or PEM text), client certificate and key (files or
//   PEM text), a server-name override (kubeconfig's tls-server-name) and, for tests,
//   insecure_skip_verify.
// - Streaming responses (watch, weight downloads) delivered chunk by chunk, never buffered.
// - A hosts-file resolver hook (hosts_file.h) consulted before the system resolver.
// - Create() makes the process ignore SIGPIPE (when its disposition is still the default): a
//   write into a connection the peer closed then fails with EPIPE and is retried, instead of
//   killing a client-only process such as the `sluice` CLI.
//
// Thread safety: every method may be called from many threads at once.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/http/backoff.h"
#include "common/http/bearer_token.h"
#include "common/http/hosts_file.h"
#include "common/http/url.h"
#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::http {

struct ClientTlsOptions {
  std::string ca_file;           // PEM bundle of trusted CAs; empty: the system's.
  std::string ca_pem;            // Or the bundle itself (kubeconfig certificate-authority-data).
  std::string client_cert_file;  // PEM client certificate (mutual TLS)...
  std::string client_key_file;   // ...and its key.
  std::string client_cert_pem;   // Or both as PEM text.
  std::string client_key_pem;
  std::string server_name;  // Name to verify and send as SNI instead of the URL's host.
  bool insecure_skip_verify = false;
};

struct ClientOptions {
  std::string base_url;  // "https://host:port/prefix"; request paths are appended.
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  std::shared_ptr<TokenSource> token;  // Null: no Authorization header.
  ClientTlsOptions tls;
  int max_attempts = 4;  // Including the first; 1 disables retries.
  BackoffPolicy backoff;
  std::chrono::milliseconds max_retry_after{60000};  // Cap on a server's Retry-After.
  std::shared_ptr<HostsFileResolver> resolver;       // Null: the system resolver only.
  std::string user_agent = "sluice/0.1.0";
  size_t max_idle_connections = 4;
  // A pooled connection idle longer than this is closed instead of reused. Servers close idle
  // keep-alive connections on their own timer (Sluice's after 2 s, server.h); a request written
  // into one just as it closes is lost, and a POST is not retried. Staying below the server's
  // timeout avoids that race; the cost is a reconnect after a pause.
  std::chrono::milliseconds max_idle_time{1000};
  Clock* clock = nullptr;  // For retry sleeps and idle ages; null: the system clock.
  // Largest whole response body Send (not Stream) accepts: a longer one, or one whose
  // Content-Length says so, is abandoned as it arrives and Send returns TooLarge, not retried.
  // Peers outside Sluice's control (HTTP environments, external engines, Prometheus) get a
  // smaller cap from their callers; the default fits the largest batch a trainer asks for.
  size_t max_response_bytes = size_t{1} << 30;
};

struct Request {
  std::string method = "GET";
  std::string path;  // Appended to the base URL's path; may carry a query string.
  httplib::Headers headers;
  std::string body;
  std::string content_type;                 // Set with a body.
  std::optional<bool> idempotent;           // Overrides the method's idempotency for retries.
  std::optional<CancellationToken> cancel;  // Stops retries and streams when cancelled.
  // A large response body is expected (a trainer's batch): over http://, Send reads it with
  // BulkExchange (bulk_exchange.h: large reads, one connection per request) instead of
  // cpp-httplib's 4 KiB reads. Same results, retries and errors either way; ignored for https
  // and for Stream.
  bool bulk_body = false;
};

struct Response {
  int status = 0;
  httplib::Headers headers;
  std::string body;  // Empty for streamed responses.

  std::string Header(const std::string& name) const;
  // OK for 2xx, otherwise the error the body describes (json_body.h StatusFromReply).
  Status ToStatus() const;
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Create(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends a request and returns the whole response, whatever its status. A non-OK Result
  // means no response was received (connection refused, timeout, TLS failure, cancelled) or
  // its body was over ClientOptions::max_response_bytes (TooLarge).
  Result<Response> Send(Request request);

  Result<Response> Get(std::string path);
  Result<Response> Delete(std::string path);
  Result<Response> Post(std::string path, std::string body, std::string content_type);
  Result<Response> Put(std::string path, std::string body, std::string content_type);

  // Streams the response body to `on_data` as it arrives. `on_head` sees the status and headers
  // first and may return false to stop before the body. `on_data` returns false to stop
  // reading (the connection is then closed). The request is retried only until the first byte
  // of the response arrives. Returns the response head (with an empty body) or the error.
  Result<Response> Stream(Request request, const std::function<bool(const Response&)>& on_head,
                          const std::function<bool(std::string_view)>& on_data);

  const Url& base_url() const { return url_; }

 private:
  explicit Client(ClientOptions options, Url url);
  Status LoadTls();
  Result<std::string> ConnectAddress() const;
  std::unique_ptr<httplib::ClientImpl> NewConnection();
  // A pooled connection idle for less than max_idle_time (`reused` true), else a new one.
  // The pooled connections idle for longer are closed.
  std::unique_ptr<httplib::ClientImpl> Acquire(bool* reused);
  // Closes every pooled connection (after one of them turned out closed by the server, the
  // others, idle as long, are likely closed too).
  void DropIdle();
  void Release(std::unique_ptr<httplib::ClientImpl> conn);
  bool IsIdempotent(const Request& request) const;
  Result<Response> Execute(Request& request, const std::function<bool(const Response&)>* on_head,
                           const std::function<bool(std::string_view)>* on_data);
  Result<Response> ExecuteBulk(Request& request);
  // The request's bytes for BulkExchange; InvalidArgument for a CR or LF in the path or a header.
  Result<std::string> BulkRequestBytes(const Request& request) const;
  // How long to wait before retrying a request answered with `out`'s status (429, 502, 503, 504
  // where the request may be repeated, attempts left); nullopt: return `out` as it is.
  std::optional<std::chrono::milliseconds> RetryDelayForStatus(const Response& out, int attempt,
                                                               bool idempotent) const;
  // Sleeps `delay` before a retry; true when the request was cancelled meanwhile.
  bool SleepBeforeRetry(const Request& request, std::chrono::milliseconds delay) const;

  ClientOptions options_;
  Url url_;
  Clock* clock_;
  std::mutex mu_;
  struct Idle {
    std::unique_ptr<httplib::ClientImpl> conn;
    Clock::MonoTime since;  // When it was released into the pool.
  };
  std::vector<Idle> idle_;  // Most recently released last.
  // CA bundle given as PEM text, written to an anonymous in-memory file (memfd) because
  // cpp-httplib trusts exactly a file's CAs but adds the system's to an in-memory store. It is
  // read through ca_memfd_path_ (/proc/self/fd/N); closed in ~Client, and gone with the process
  // however it ends (a file in /tmp was left behind by every killed process).
  int ca_memfd_ = -1;
  std::string ca_memfd_path_;
  // Client certificate and key parsed from PEM text; owned here, shared by pooled connections
  // (OpenSSL counts references), freed in ~Client.
  X509* client_cert_ = nullptr;
  EVP_PKEY* client_key_ = nullptr;
};

}  // namespace sluice::http
