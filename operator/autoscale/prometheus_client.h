// PrometheusClient: instant queries against the Prometheus HTTP API, reduced to one number.
//
// The autoscaler's metrics are pool-wide totals, so each query must yield one value:
//   GET <base>/api/v1/query?query=<percent-encoded PromQL>&timeout=<ms>ms
// and the reply ({"status": "success", "data": {"resultType": ..., "result": ...}}) is read as:
//   - "vector" with exactly one sample: that sample's value;
//   - "vector" with no sample: 0. An absent series means no load (a queue gauge that was never
//     written, a rate over a counter with no increments), and 0 is what lets a pool scale to
//     zero; a query that must never be absent can say `or vector(0)` itself;
//   - "vector" with more than one sample: an error naming the count ("query must return one
//     series; got 3: sum() it"), because picking one would be arbitrary;
//   - "scalar": its value;
//   - anything else ("matrix", "string"): an error.
// A sample value of NaN or +-Inf is an error (a ratio of two idle counters is NaN, and no
// replica count follows from it). Errors:
//   - Prometheus's own error reply ({"status": "error", "errorType": "bad_data", "error":
//     "..."}), on any HTTP status: the code from the HTTP status (400 -> InvalidArgument, 422 ->
//     Unprocessable, 503 -> Unavailable) and the message "prometheus <errorType>: <error>";
//   - another non-2xx reply: "prometheus returned HTTP <code>: <start of body>";
//   - no reply (refused, timed out): the HTTP client's error, Unavailable or DeadlineExceeded;
//   - a reply that is not the documented JSON: Internal; a result that is not one finite
//     number (several series, NaN, matrix): Unprocessable.
// Only transport errors get a prefix ("prometheus query: "); the caller adds the metric name.
//
// Connections are pooled and reused (http::Client). A request whose connection fails or that
// gets 502/503/504 is tried once more after about 200 ms; `timeout` bounds connecting, each
// read and write, and is passed to Prometheus as the query's evaluation timeout.
//
// Thread safety: QueryScalar may be called from many threads at once.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/http/client.h"
#include "common/status.h"

namespace sluice::autoscale {

class PrometheusClient {
 public:
  // `base_url`: "http://prometheus.monitoring:9090" (a path prefix is kept, for Prometheus
  // behind a proxy). Errors: a malformed URL (InvalidArgument), TLS setup failures.
  static Result<std::unique_ptr<PrometheusClient>> Create(std::string base_url,
                                                          std::chrono::milliseconds timeout);

  // Runs an instant query at the server's "now" and returns its one value (see above).
  Result<double> QueryScalar(const std::string& promql);

  const std::string& base_url() const { return base_url_; }

 private:
  PrometheusClient(std::unique_ptr<http::Client> client, std::string base_url,
                   std::chrono::milliseconds timeout);

  std::unique_ptr<http::Client> client_;
  std::string base_url_;
  std::chrono::milliseconds timeout_;
};

// The query of a metric with "$pool" and "$namespace" replaced by the pool's name and namespace,
// in one left-to-right pass (replacement text is not scanned again). Names are DNS labels, so
// they need no quoting inside PromQL string literals. "$pools" becomes "<pool>s": the
// placeholders have no word boundary.
std::string ExpandQuery(const std::string& query, const std::string& pool, const std::string& ns);

}  // namespace sluice::autoscale
