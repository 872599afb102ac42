// Server: the HTTP(S) server every Sluice process runs (API, health, metrics).
//
// Built on cpp-httplib, it adds what every component needs and nothing component-specific:
// - bearer-token authentication checked before the body is read (401 with a JSON error);
//   /healthz and /readyz are always open, /metrics is open unless `metrics_require_auth`; a
//   component with credentials of its own (the API server's service-account tokens) decides on
//   the requests the token does not admit through `authenticate_other`;
// - a request body cap (413), read/write/keep-alive timeouts, a deadline for receiving a whole
//   request (408; a client dripping bytes cannot hold a worker), a bounded worker pool that
//   answers connections it has no room for with 503 and Retry-After instead of making them wait
//   (deadline_server.h);
// - JSON errors for everything it rejects itself (404 for unknown routes, 413, 401, 500 for a
//   handler that throws), in the shape of json_body.h;
// - access logs (one JSON line per request) and metrics per server, method, route pattern and
//   code: sluice_http_requests_total, sluice_http_request_duration_seconds,
//   sluice_http_requests_in_flight, sluice_http_unauthorized_requests_total,
//   sluice_http_request_deadline_exceeded_total, sluice_http_refused_connections_total; handlers
//   add fields of their own to the access log line (AddAccessLogField: the authenticated user,
//   say);
// - /healthz (the process is alive), /readyz (every readiness check passes and the server is
//   not shutting down; `?verbose` lists each check), /metrics (Prometheus text format);
// - graceful shutdown: stop accepting, mark not ready, cancel `shutdown_token()` so long polls
//   and streams return early, let in-flight requests finish within `shutdown_grace`.
//
// Routes are registered before Start(). Patterns are cpp-httplib regular expressions, e.g.
// R"(/v1/batches/([^/]+))"; the captured groups are in req.matches. Handlers run on worker
// threads, concurrently; a handler that blocks (long poll, stream) must watch shutdown_token().
//
// Thread safety: Start and Shutdown from the owning thread; port(), shutdown_token() anywhere.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/http/bearer_token.h"
#include "common/http/deadline_server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "common/tls/reloading_certificate.h"

namespace sluice::http {

// The certificate and key files are read again when either changes (a renewed Secret): new
// connections get the new pair (tls/reloading_certificate.h).
struct ServerTlsOptions {
  std::string cert_file;       // PEM certificate chain served to clients.
  std::string key_file;        // PEM private key for it.
  std::string client_ca_file;  // When set, clients must present a certificate signed by it.
};

struct ServerOptions {
  std::string name = "http";                      // Names this server in logs and metric labels.
  std::string address = "127.0.0.1";              // Address to bind; "0.0.0.0" for every interface.
  int port = 0;                                   // 0 picks a free port; port() tells which.
  size_t max_body_bytes = 16u << 20;              // Larger request bodies get 413.
  std::chrono::milliseconds read_timeout{30000};  // Longest wait for any one read.
  std::chrono::milliseconds write_timeout{30000};  // Longest wait for room to write.
  // A request's head and body must arrive within this from its first byte (408 otherwise). Size
  // it for the largest body a client sends over its slowest link.
  std::chrono::milliseconds request_deadline{30000};
  std::chrono::seconds keep_alive_timeout{2};  // Idle keep-alive connections close after this.
  size_t keep_alive_max_requests = 10000;      // Requests per connection before it is closed.
  size_t worker_threads = 8;
  // Connections waiting for a worker. Beyond them, connections are answered 503 with
  // Retry-After, up to max_refusing_connections waiting for that answer; past those the accept
  // loop waits (bounded_task_queue.h). 0 refusals: the accept loop waits at once.
  size_t max_queued_connections = 64;
  size_t max_refusing_connections = 256;
  std::chrono::seconds refusal_retry_after{1};  // The refusals' Retry-After.
  // Kernel accept queue length (capped by net.core.somaxconn). cpp-httplib's own is 5, which
  // drops connections when many clients (watchers, informers) connect at once.
  int listen_backlog = 1024;
  std::chrono::milliseconds shutdown_grace{10000};
  std::shared_ptr<TokenSource> auth;  // Null: no authentication.
  // Decides on the requests `auth` does not admit (no bearer token, or another token), before
  // their body is read, on the worker thread that would then run the handler. Returns true to
  // serve the request (a token the component accepts itself); false to refuse it with `res` as
  // the hook filled it (a 401 in the component's own error format), after which the server counts
  // it as unauthorized and closes the connection. Null: such requests get the standard 401. Only
  // consulted when `auth` is set.
  std::function<bool(const httplib::Request& req, httplib::Response& res)> authenticate_other;
  bool metrics_require_auth = true;
  std::optional<ServerTlsOptions> tls;
  bool access_log = true;
};

class Server {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  // A readiness check: OK when this part of the process can serve traffic.
  using ReadinessCheck = std::function<Status()>;

  // `registry` and `logger` must outlive the server; `registry` may be null (no /metrics).
  Server(ServerOptions options, metrics::Registry* registry, const log::Logger& logger);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Get(const std::string& pattern, Handler handler);
  void Post(const std::string& pattern, Handler handler);
  void Put(const std::string& pattern, Handler handler);
  void Patch(const std::string& pattern, Handler handler);
  void Delete(const std::string& pattern, Handler handler);
  void AddReadinessCheck(std::string name, ReadinessCheck check);

  // Binds and starts serving on background threads. Errors: the address is in use, the TLS
  // files cannot be loaded.
  Status Start();
  // The bound port (after Start).
  int port() const { return port_; }
  // "http://127.0.0.1:port" or "https://...".
  std::string BaseUrl() const;

  // Graceful shutdown; idempotent. Returns once every worker has finished.
  void Shutdown();
  // Cancelled when shutdown begins.
  CancellationToken shutdown_token() const { return shutdown_.Token(); }
  bool shutting_down() const { return shutdown_.IsCancelled(); }

  // Requests being handled right now (for tests and readiness).
  int in_flight() const { return in_flight_.load(); }

  // Adds `key: value` to the access log line of the request the calling thread is serving (every
  // server's: requests run start to finish on one worker thread); for handlers and
  // `authenticate_other`. Fields added outside a request are dropped when the thread's next
  // request starts.
  static void AddAccessLogField(std::string key, std::string value);

 private:
  struct RouteMetrics;
  Handler Wrap(const std::string& method, const std::string& pattern, Handler handler);
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res);
  void LogAndCount(const httplib::Request& req, const httplib::Response& res);
  void RegisterBuiltinRoutes();
  ConnectionPolicy MakeConnectionPolicy();

  ServerOptions options_;
  metrics::Registry* registry_;
  log::Logger logger_;
  // Before server_: its SSL context's certificate callback points here.
  std::unique_ptr<tls::ReloadingCertificate> certificate_;
  Status certificate_status_;  // Why the TLS files could not be loaded (Start reports it).
  std::unique_ptr<httplib::Server> server_;
  std::vector<std::pair<std::string, ReadinessCheck>> readiness_;
  CancellationSource shutdown_;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  int port_ = 0;
  std::atomic<int> listen_fd_{-1};  // The listening socket, to raise its backlog.
  std::thread listener_;

  metrics::CounterFamily* requests_ = nullptr;
  metrics::HistogramFamily* durations_ = nullptr;
  metrics::Gauge* in_flight_gauge_ = nullptr;
  metrics::Counter* unauthorized_ = nullptr;
  metrics::Counter* deadline_exceeded_ = nullptr;
  metrics::Counter* refused_ = nullptr;
};

}  // namespace sluice::http
