// RestClient: one API server, spoken to over HTTP(S) with the configured credentials, a
// client-side rate limit, retries of transient errors, and errors mapped from metav1.Status.
//
// Every request:
//   1. waits for a token of the client-side limiter (RestConfig qps/burst; watches included, as
//      in client-go);
//   2. carries `User-Agent: sluice-operator/<version>`, `Accept: application/json` and the
//      credential: an exec-plugin token, the token file's current content (re-read when it
//      rotates), a static token, or basic auth;
//   3. on 401 with an exec plugin: the token is invalidated and the request sent once more with a
//      fresh one;
//   4. on a transient error it is retried with jittered exponential backoff (RetryOptions):
//      429 TooManyRequests for every verb, honouring Retry-After (capped); 5xx replies with a
//      Retry-After for every verb; 500 ServerTimeout, 503, 504 and connection failures only for
//      GET, PUT and DELETE (a POST or PATCH may have been applied). Conflict, Invalid and other
//      4xx are returned at once: the caller decides (a reconciler requeues).
//   5. a non-2xx reply becomes a non-OK Status (errors.h).
//
// Metrics (client-go names, when a registry is given): rest_client_requests_total{code,method,
// host}, rest_client_request_duration_seconds{verb,host},
// rest_client_rate_limiter_duration_seconds.
//
// Ownership: the client owns its connection pools; the Clock and Registry must outlive it.
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/backoff.h"
#include "common/http/client.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/errors.h"
#include "kube/rest_config.h"
#include "kube/token_bucket.h"

namespace sluice::kube {

struct RestRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/namespaces/default/pods"; no query string.
  std::vector<std::pair<std::string, std::string>> query;  // Encoded by the client.
  std::string body;
  std::string content_type;  // With a body; "application/json" when empty.
  std::optional<CancellationToken> cancel;
};

struct RestResponse {
  int status = 0;
  std::string body;
};

struct RestClientOptions {
  int max_attempts = 5;  // Including the first.
  http::BackoffPolicy backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(30000), 2.0,
                              0.5};
  std::chrono::seconds max_retry_after{60};
  // A watch that receives no byte for this long is considered stalled and fails with
  // DeadlineExceeded. API servers send bookmarks about once a minute when asked.
  std::chrono::milliseconds watch_stall_timeout{std::chrono::seconds(150)};
  Clock* clock = nullptr;                 // Rate limiting and retry sleeps; null: system clock.
  metrics::Registry* registry = nullptr;  // Null: no metrics.
};

class RestClient {
 public:
  static Result<std::unique_ptr<RestClient>> Create(RestConfig config,
                                                    RestClientOptions options = {});
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // Sends `request` (with limiting, auth and retries) and returns the 2xx reply, or the error.
  Result<RestResponse> Do(const RestRequest& request);
  // Do, with the reply body parsed as JSON.
  Result<nlohmann::json> DoJson(const RestRequest& request);

  // Sends a streaming GET (watch) once, without retries: `on_data` sees the body as it arrives
  // and returns false to stop. OK when the server ended the stream or the caller stopped; a
  // non-2xx reply is its error; no byte for watch_stall_timeout is DeadlineExceeded.
  Status Stream(const RestRequest& request, const std::function<bool(std::string_view)>& on_data);

  const RestConfig& config() const { return config_; }
  Clock& clock() const { return *clock_; }

 private:
  RestClient(RestConfig config, RestClientOptions options);
  Status Init();
  // Adds credentials; `token_used` gets the bearer token sent (for invalidation).
  Status Authorize(httplib::Headers& headers, std::string& token_used);
  http::Request ToHttp(const RestRequest& request) const;
  void Observe(const std::string& method, int code, Clock::MonoTime start);

  RestConfig config_;
  RestClientOptions options_;
  Clock* clock_;
  std::unique_ptr<http::Client> http_;
  std::unique_ptr<http::Client> watch_http_;
  std::shared_ptr<http::TokenSource> token_source_;
  std::unique_ptr<TokenBucket> limiter_;
  std::string host_label_;
  metrics::CounterFamily* requests_ = nullptr;
  metrics::HistogramFamily* durations_ = nullptr;
  metrics::Histogram* limiter_wait_ = nullptr;
};

// "a=b&c=d" with values percent-encoded; empty for no parameters.
std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace sluice::kube
