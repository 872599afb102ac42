#include "kube/rest_client.h"

#include <algorithm>
#include <random>

#include "common/http/url.h"

namespace sluice::kube {
namespace {

std::string Base64(std::string_view in) {
  static constexpr char kChars[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(kChars[(v >> s) & 63]);
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], '='};
  }
  return out;
}

double UnitRandom() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

bool Idempotent(const std::string& method) {
  return method == "GET" || method == "PUT" || method == "DELETE" || method == "HEAD";
}

}  // namespace

std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out += '&';
    out += http::PercentEncode(k) + "=" + http::PercentEncode(v);
  }
  return out;
}

RestClient::RestClient(RestConfig config, RestClientOptions options)
    : config_(std::move(config)), options_(options), clock_(&ClockOrSystem(options.clock)) {}

RestClient::~RestClient() = default;

Result<std::unique_ptr<RestClient>> RestClient::Create(RestConfig config,
                                                       RestClientOptions options) {
  std::unique_ptr<RestClient> client(new RestClient(std::move(config), options));
  SLUICE_RETURN_IF_ERROR(client->Init());
  return client;
}

Status RestClient::Init() {
  if (config_.host.empty()) return Status::InvalidArgument("REST config has no host");
  if (!config_.username.empty() &&
      (!config_.bearer_token.empty() || !config_.token_file.empty() || config_.exec)) {
    return Status::InvalidArgument("basic auth and a bearer token cannot both be configured");
  }
  http::ClientOptions base;
  base.base_url = config_.host;
  while (!base.base_url.empty() && base.base_url.back() == '/') base.base_url.pop_back();
  base.connect_timeout = config_.connect_timeout;
  base.read_timeout = config_.request_timeout;
  base.tls = config_.tls;
  base.max_attempts = 1;  // Retries happen here, with the rate limiter and our clock.
  base.user_agent = config_.user_agent;
  base.clock = clock_;
  base.max_idle_connections = 8;
  Result<std::unique_ptr<http::Client>> http = http::Client::Create(base);
  if (!http.ok()) return http.status().WithContext("API server " + config_.host);
  http_ = std::move(http).value();
  http::ClientOptions watch = base;
  watch.read_timeout = options_.watch_stall_timeout;
  Result<std::unique_ptr<http::Client>> watch_http = http::Client::Create(watch);
  if (!watch_http.ok()) return watch_http.status().WithContext("API server " + config_.host);
  watch_http_ = std::move(watch_http).value();
  if (!config_.token_file.empty() && !config_.exec) {
    Result<std::shared_ptr<http::TokenSource>> source =
        http::TokenSource::FromFile(config_.token_file);
    if (!source.ok()) return source.status().WithContext("token file");
    token_source_ = *source;
  } else if (!config_.bearer_token.empty() && !config_.exec) {
    token_source_ = http::TokenSource::FromValue(config_.bearer_token);
  }
  if (config_.qps > 0) {
    limiter_ = std::make_unique<TokenBucket>(config_.qps, std::max(1, config_.burst), *clock_);
  }
  host_label_ = http_->base_url().HostPort();
  if (options_.registry) {
    requests_ = &options_.registry->AddCounter(
        "rest_client_requests_total",
        "Number of HTTP requests to the API server, partitioned by status code, method, and host.",
        {"code", "method", "host"});
    durations_ = &options_.registry->AddHistogram(
        "rest_client_request_duration_seconds", "Request latency in seconds, by verb and host.",
        {"verb", "host"}, {0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60});
    limiter_wait_ = &options_.registry
                         ->AddHistogram("rest_client_rate_limiter_duration_seconds",
                                        "Client-side rate limiter latency in seconds.", {},
                                        {0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60})
                         .WithLabels({});
  }
  return Status::Ok();
}

Status RestClient::Authorize(httplib::Headers& headers, std::string& token_used) {
  token_used.clear();
  if (config_.exec) {
    Result<std::string> token = config_.exec->Token();
    if (!token.ok()) return token.status();
    token_used = *token;
  } else if (token_source_) {
    token_used = token_source_->Get();
  }
  if (!token_used.empty()) {
    headers.emplace("Authorization", "Bearer " + token_used);
  } else if (!config_.username.empty()) {
    headers.emplace("Authorization", "Basic " + Base64(config_.username + ":" + config_.password));
  }
  return Status::Ok();
}

http::Request RestClient::ToHttp(const RestRequest& request) const {
  http::Request out;
  out.method = request.method;
  out.path = request.path;
  const std::string query = EncodeQuery(request.query);
  if (!query.empty()) out.path += "?" + query;
  out.headers.emplace("Accept", "application/json");
  out.body = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    out.content_type = request.content_type.empty() ? "application/json" : request.content_type;
  }
  out.cancel = request.cancel;
  return out;
}

void RestClient::Observe(const std::string& method, int code, Clock::MonoTime start) {
  if (!requests_) return;
  requests_->WithLabels({code == 0 ? "<error>" : std::to_string(code), method, host_label_}).Inc();
  durations_->WithLabels({method, host_label_})
      .Observe(std::chrono::duration<double>(clock_->Now() - start).count());
}

Result<RestResponse> RestClient::Do(const RestRequest& request) {
  const std::string what = request.method + " " + request.path;
  if (request.path.empty() || request.path[0] != '/') {
    return Status::InvalidArgument("request path \"" + request.path + "\" must start with '/'");
  }
  bool reauthenticated = false;
  for (int attempt = 0;; ++attempt) {
    if (request.cancel && request.cancel->IsCancelled()) {
      return Status::Cancelled(what + ": cancelled");
    }
    if (limiter_) {
      const Clock::Duration waited = limiter_->Wait();
      if (limiter_wait_) limiter_wait_->Observe(std::chrono::duration<double>(waited).count());
    }
    http::Request hreq = ToHttp(request);
    std::string token_used;
    SLUICE_RETURN_IF_ERROR(Authorize(hreq.headers, token_used));
    const Clock::MonoTime start = clock_->Now();
    Result<http::Response> reply = http_->Send(std::move(hreq));
    Observe(request.method, reply.ok() ? reply->status : 0, start);

    Status error;
    std::optional<std::chrono::seconds> retry_after;
    bool retryable = false;
    if (!reply.ok()) {
      error = reply.status().WithContext(what);
      retryable = error.code() != StatusCode::kCancelled && Idempotent(request.method);
    } else if (reply->status >= 200 && reply->status < 300) {
      return RestResponse{reply->status, std::move(reply->body)};
    } else {
      const ApiError api = ParseApiError(reply->status, reply->body, reply->Header("Retry-After"));
      error = api.ToStatus();
      retry_after = api.retry_after;
      if (reply->status == 401 && config_.exec && !reauthenticated) {
        config_.exec->Invalidate(token_used);
        reauthenticated = true;
        --attempt;  // A fresh credential is not a retry.
        continue;
      }
      if (reply->status == 429 || (reply->status >= 500 && retry_after)) {
        retryable = true;
      } else if (IsTransient(error) && reply->status >= 500) {
        retryable = Idempotent(request.method);
      }
    }
    if (!retryable || attempt + 1 >= options_.max_attempts) return error;
    Clock::Duration delay = http::BackoffDelay(options_.backoff, attempt, UnitRandom());
    if (retry_after) {
      delay = std::min<Clock::Duration>(*retry_after, options_.max_retry_after);
    }
    clock_->SleepFor(delay);
  }
}

Result<nlohmann::json> RestClient::DoJson(const RestRequest& request) {
  SLUICE_ASSIGN_OR_RETURN(RestResponse reply, Do(request));
  nlohmann::json doc = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Status::Internal(request.method + " " + request.path +
                            ": the API server's reply is not JSON");
  }
  return doc;
}

Status RestClient::Stream(const RestRequest& request,
                          const std::function<bool(std::string_view)>& on_data) {
  const std::string what = request.method + " " + request.path;
  if (request.path.empty() || request.path[0] != '/') {
    return Status::InvalidArgument("request path \"" + request.path + "\" must start with '/'");
  }
  bool reauthenticated = false;
  for (;;) {
    if (limiter_) limiter_->Wait();
    http::Request hreq = ToHttp(request);
    std::string token_used;
    SLUICE_RETURN_IF_ERROR(Authorize(hreq.headers, token_used));
    const Clock::MonoTime start = clock_->Now();
    Result<http::Response> reply = watch_http_->Stream(std::move(hreq), nullptr, on_data);
    Observe(request.method, reply.ok() ? reply->status : 0, start);
    if (!reply.ok()) {
      if (reply.status().code() == StatusCode::kDeadlineExceeded) {
        return Status::DeadlineExceeded(what + ": the stream stalled (no data for " +
                                        std::to_string(options_.watch_stall_timeout.count()) +
                                        " ms)");
      }
      return reply.status().WithContext(what);
    }
    if (reply->status >= 200 && reply->status < 300) return Status::Ok();
    if (reply->status == 401 && config_.exec && !reauthenticated) {
      config_.exec->Invalidate(token_used);
      reauthenticated = true;
      continue;
    }
    return ParseApiError(reply->status, reply->body, reply->Header("Retry-After")).ToStatus();
  }
}

}  // namespace sluice::kube
