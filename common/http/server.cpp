#include "common/http/server.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/http/bounded_task_queue.h"
#include "common/http/json_body.h"
#include "common/metrics/exposition.h"

namespace sluice::http {
namespace {

// Real time for I/O timeouts and latencies; decisions read a sluice::Clock (common/clock.h).
using Steady = std::chrono::steady_clock;

// cpp-httplib serves each request start to finish on one worker thread, so per-request facts
// that its hooks do not pass to each other (start time, matched route) travel in thread-locals.
thread_local Steady::time_point t_request_start{};
thread_local const std::string* t_route = nullptr;
thread_local log::Fields t_log_fields;  // AddAccessLogField's, for this request's log line.

const std::string kUnmatchedRoute = "unmatched";

bool IsOpenPath(const std::string& path, bool metrics_open) {
  return path == "/healthz" || path == "/readyz" || (metrics_open && path == "/metrics");
}

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

Server::Server(ServerOptions options, metrics::Registry* registry, const log::Logger& logger)
    : options_(std::move(options)),
      registry_(registry),
      logger_(logger.With({{"server", options_.name}})) {
  if (options_.tls) {
    const ServerTlsOptions& tls = *options_.tls;
    auto ssl = std::make_unique<DeadlineSslServer>(
        tls.cert_file.c_str(), tls.key_file.c_str(),
        tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str(), MakeConnectionPolicy());
    auto certificate = tls::ReloadingCertificate::Load(tls.cert_file, tls.key_file);
    if (certificate.ok()) {
      certificate_ = std::move(*certificate);
      if (ssl->is_valid()) certificate_->InstallOn(ssl->ssl_context());
    } else {
      certificate_status_ = certificate.status();
    }
    server_ = std::move(ssl);
  } else {
    server_ = std::make_unique<DeadlineServer>(MakeConnectionPolicy());
  }
  if (registry_ != nullptr) {
    requests_ = &registry_->AddCounter("sluice_http_requests_total",
                                       "HTTP requests served, by server, method, route and code.",
                                       {"server", "method", "route", "code"});
    durations_ = &registry_->AddHistogram(
        "sluice_http_request_duration_seconds",
        "Time from reading a request to writing its response, by server, method and route.",
        {"server", "method", "route"}, LatencyBuckets());
    in_flight_gauge_ = &registry_
                            ->AddGauge("sluice_http_requests_in_flight",
                                       "HTTP requests being handled now.", {"server"})
                            .WithLabels({options_.name});
    unauthorized_ =
        &registry_
             ->AddCounter("sluice_http_unauthorized_requests_total",
                          "Requests rejected with 401 for a missing or wrong token.", {"server"})
             .WithLabels({options_.name});
    deadline_exceeded_ =
        &registry_
             ->AddCounter("sluice_http_request_deadline_exceeded_total",
                          "Connections closed because a request did not arrive whole within the "
                          "request deadline.",
                          {"server"})
             .WithLabels({options_.name});
    refused_ = &registry_
                    ->AddCounter("sluice_http_refused_connections_total",
                                 "Connections answered 503 because every worker was busy and the "
                                 "queue was full.",
                                 {"server"})
                    .WithLabels({options_.name});
  }
  RegisterBuiltinRoutes();
}

ConnectionPolicy Server::MakeConnectionPolicy() {
  ConnectionPolicy policy;
  policy.read_timeout = options_.read_timeout;
  policy.write_timeout = options_.write_timeout;
  policy.keep_alive_timeout = options_.keep_alive_timeout;
  policy.keep_alive_max_requests = options_.keep_alive_max_requests;
  policy.request_deadline = options_.request_deadline;
  policy.refusal_retry_after = options_.refusal_retry_after;
  // The counters are registered after the server object is made; the hooks run once it serves.
  policy.on_deadline = [this](const std::string& ip) {
    if (deadline_exceeded_ != nullptr) deadline_exceeded_->Inc();
    logger_.Warn(
        "closed a connection whose request missed the deadline",
        {{"remote", ip},
         {"deadline_seconds", std::chrono::duration<double>(options_.request_deadline).count()}});
  };
  policy.on_refused = [this](const std::string& ip) {
    if (refused_ != nullptr) refused_->Inc();
    logger_.Warn(
        "refused a connection: every worker is busy and the queue is full",
        {{"remote", ip},
         {"worker_threads", static_cast<int64_t>(options_.worker_threads)},
         {"max_queued_connections", static_cast<int64_t>(options_.max_queued_connections)}});
  };
  return policy;
}

Server::~Server() { Shutdown(); }

std::string Server::BaseUrl() const {
  const std::string host = options_.address == "0.0.0.0" ? "127.0.0.1" : options_.address;
  return std::string(options_.tls ? "https" : "http") + "://" + host + ":" + std::to_string(port_);
}

Server::Handler Server::Wrap(const std::string& method, const std::string& pattern,
                             Handler handler) {
  // The pattern string lives in the closure, so t_route may point at it for the request.
  return [this, method, route = pattern, handler = std::move(handler)](const httplib::Request& req,
                                                                       httplib::Response& res) {
    t_route = &route;
    in_flight_.fetch_add(1);
    if (in_flight_gauge_) in_flight_gauge_->Inc();
    struct Done {
      Server* s;
      ~Done() {
        if (s->in_flight_gauge_) s->in_flight_gauge_->Dec();
        s->in_flight_.fetch_sub(1);
      }
    } done{this};
    try {
      handler(req, res);
    } catch (const std::exception& e) {
      logger_.Error("handler threw", {{"method", method}, {"route", route}, {"error", e.what()}});
      ReplyError(res, Status::Internal(std::string("internal error: ") + e.what()));
    } catch (...) {
      logger_.Error("handler threw a non-exception", {{"method", method}, {"route", route}});
      ReplyError(res, Status::Internal("internal error"));
    }
  };
}

void Server::Get(const std::string& pattern, Handler handler) {
  SLUICE_CHECK(!started_.load());
  server_->Get(pattern, Wrap("GET", pattern, std::move(handler)));
}
void Server::Post(const std::string& pattern, Handler handler) {
  SLUICE_CHECK(!started_.load());
  server_->Post(pattern, Wrap("POST", pattern, std::move(handler)));
}
void Server::Put(const std::string& pattern, Handler handler) {
  SLUICE_CHECK(!started_.load());
  server_->Put(pattern, Wrap("PUT", pattern, std::move(handler)));
}
void Server::Patch(const std::string& pattern, Handler handler) {
  SLUICE_CHECK(!started_.load());
  server_->Patch(pattern, Wrap("PATCH", pattern, std::move(handler)));
}
void Server::Delete(const std::string& pattern, Handler handler) {
  SLUICE_CHECK(!started_.load());
  server_->Delete(pattern, Wrap("DELETE", pattern, std::move(handler)));
}

void Server::AddReadinessCheck(std::string name, ReadinessCheck check) {
  SLUICE_CHECK(!started_.load());
  readiness_.emplace_back(std::move(name), std::move(check));
}

void Server::RegisterBuiltinRoutes() {
  Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  Get("/readyz", [this](const httplib::Request& req, httplib::Response& res) {
    // Same shape as the Kubernetes API server's /readyz: "[+]name ok" lines when verbose.
    bool ready = !shutting_down();
    std::string report = ready ? "[+]shutdown ok\n" : "[-]shutdown failed: shutting down\n";
    for (const auto& [name, check] : readiness_) {
      const Status s = check();
      ready = ready && s.ok();
      report += s.ok() ? "[+]" + name + " ok\n" : "[-]" + name + " failed: " + s.message() + "\n";
    }
    res.status = ready ? 200 : 503;
    if (req.has_param("verbose") || !ready) {
      res.set_content(report + (ready ? "readyz check passed\n" : "readyz check failed\n"),
                      "text/plain");
    } else {
      res.set_content("ok\n", "text/plain");
    }
  });
  if (registry_ != nullptr) {
    Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics::ExposeText(*registry_), std::string(metrics::kTextContentType));
    });
  }
}

void Server::AddAccessLogField(std::string key, std::string value) {
  t_log_fields.emplace_back(std::move(key), std::move(value));
}

httplib::Server::HandlerResponse Server::PreRoute(const httplib::Request& req,
                                                  httplib::Response& res) {
  t_request_start = Steady::now();
  t_route = nullptr;
  t_log_fields.clear();
  if (!options_.auth || IsOpenPath(req.path, !options_.metrics_require_auth)) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  // Keep the header string alive: the parsed token is a view into it.
  const std::string header = req.get_header_value("Authorization");
  const std::optional<std::string_view> token = ParseBearerHeader(header);
  if (token && TokensEqual(*token, options_.auth->Get())) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  if (options_.authenticate_other && options_.authenticate_other(req, res)) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  if (unauthorized_) unauthorized_->Inc();
  if (!options_.authenticate_other) {
    ReplyError(res, Status::Unauthenticated(
                        token ? "the bearer token is not valid"
                              : "missing bearer token: send \"Authorization: Bearer <token>\""));
  }
  res.set_header("WWW-Authenticate", "Bearer");
  // The body of a rejected request is never read, so the connection cannot carry another.
  res.set_header("Connection", "close");
  return httplib::Server::HandlerResponse::Handled;
}

void Server::LogAndCount(const httplib::Request& req, const httplib::Response& res) {
  const double seconds =
      t_request_start == Steady::time_point{}
          ? 0.0
          : std::chrono::duration<double>(Steady::now() - t_request_start).count();
  const std::string& route = t_route ? *t_route : kUnmatchedRoute;
  t_request_start = {};
  t_route = nullptr;
  log::Fields extra = std::move(t_log_fields);
  t_log_fields.clear();
  if (requests_) {
    requests_->WithLabels({options_.name, req.method, route, std::to_string(res.status)}).Inc();
    durations_->WithLabels({options_.name, req.method, route}).Observe(seconds);
  }
  if (!options_.access_log) return;
  log::Fields fields = {{"method", req.method},
                        {"path", req.path},
                        {"route", route},
                        {"status", res.status},
                        {"duration_seconds", seconds},
                        {"remote", req.remote_addr},
                        {"request_bytes", req.body.size()}};
  for (log::Field& f : extra) fields.push_back(std::move(f));
  // Probes and scrapes arrive every few seconds; keep them out of the info log.
  if (IsOpenPath(req.path, true)) {
    logger_.Debug("request", fields);
  } else {
    logger_.Info("request", fields);
  }
}

Status Server::Start() {
  SLUICE_CHECK(!started_.load());
  if (!certificate_status_.ok()) return certificate_status_;
  if (!server_->is_valid()) {
    return Status::InvalidArgument("cannot load the TLS certificate \"" + options_.tls->cert_file +
                                   "\" or key \"" + options_.tls->key_file + "\"");
  }
  server_->set_payload_max_length(options_.max_body_bytes);
  // The connection loop (MakeConnectionPolicy) applies the timeouts and keep-alive limits;
  // httplib still writes the latter into its Keep-Alive response header.
  server_->set_keep_alive_timeout(options_.keep_alive_timeout.count());
  server_->set_keep_alive_max_count(options_.keep_alive_max_requests);
  server_->set_tcp_nodelay(true);
  const size_t threads = options_.worker_threads;
  const size_t queued = options_.max_queued_connections;
  const size_t refusing = options_.max_refusing_connections;
  server_->new_task_queue = [threads, queued, refusing] {
    return new BoundedTaskQueue(threads, queued, refusing);
  };
  server_->set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return PreRoute(req, res); });
  server_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        Status status;
        switch (res.status) {
          case 404:
            status = Status::NotFound("no route for " + req.method + " " + req.path);
            break;
          case 413:
            status = Status::TooLarge("the request body exceeds the limit of " +
                                      std::to_string(options_.max_body_bytes) + " bytes");
            break;
          case 400:
            if (CurrentRequestMissedDeadline()) {
              // cpp-httplib answers 400 to a head or body that stopped arriving.
              nlohmann::json body = ErrorJson(Status::DeadlineExceeded(
                  "the request was not received within " +
                  std::to_string(options_.request_deadline.count()) + " ms"));
              body["error"]["code"] = 408;
              body["error"]["reason"] = "RequestTimeout";
              ReplyJson(res, body, 408);
              res.set_header("Connection", "close");  // The connection loop closes it.
              return httplib::Server::HandlerResponse::Handled;
            }
            status = Status::InvalidArgument("malformed HTTP request");
            break;
          default:
            status = Status(StatusCodeForHttp(res.status), "HTTP " + std::to_string(res.status));
        }
        const int code = res.status;
        ReplyError(res, status);
        res.status = code;  // Keep the precise code (e.g. 405) even where the Status maps coarser.
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_->set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { LogAndCount(req, res); });

  server_->set_socket_options([this](socket_t sock) {
    // SO_REUSEADDR only: a restarted server rebinds its port while old connections sit in
    // TIME_WAIT. Not httplib's default SO_REUSEPORT, with which a second server (a second local
    // cluster on 6443) bound a port that was in use and the kernel split connections between the
    // two, so clients failed TLS verification against the other one's certificate.
    int yes = 1;
    (void)::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_.store(static_cast<int>(sock));
  });
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.address);
  } else {
    port_ = server_->bind_to_port(options_.address, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return Status::Unavailable("cannot listen on " + options_.address + ":" +
                               std::to_string(options_.port) + " (address in use or invalid)");
  }
  // httplib listened with a backlog of 5; listening again on the bound socket only raises it.
  if (const int fd = listen_fd_.load(); fd >= 0 && options_.listen_backlog > 5) {
    if (::listen(fd, options_.listen_backlog) != 0) {
      logger_.Warn("cannot raise the listen backlog", {{"error", std::strerror(errno)}});
    }
  }
  started_ = true;
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  // listen_after_bind flips is_running once the accept loop is entered.
  for (int i = 0; i < 2000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  logger_.Info("listening", {{"url", BaseUrl()}, {"auth", options_.auth != nullptr}});
  return Status::Ok();
}

void Server::Shutdown() {
  if (!started_.load() || stopped_.exchange(true)) return;
  const auto began = Steady::now();
  shutdown_.Cancel();  // Readiness fails and long polls return at once.
  server_->stop();     // Stop accepting; keep-alive loops end after their current request.
  const auto deadline = began + options_.shutdown_grace;
  while (in_flight_.load() > 0 && Steady::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (in_flight_.load() > 0) {
    logger_.Warn(
        "requests still running after the shutdown grace period; waiting for them",
        {{"in_flight", in_flight_.load()},
         {"grace_seconds", std::chrono::duration<double>(options_.shutdown_grace).count()}});
  }
  if (listener_.joinable()) listener_.join();  // Returns once the worker pool has drained.
  logger_.Info("stopped",
               {{"seconds", std::chrono::duration<double>(Steady::now() - began).count()}});
}

}  // namespace sluice::http
