#include "operator/autoscale/prometheus_client.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/http/url.h"

namespace sluice::autoscale {
namespace {

constexpr size_t kMaxEcho = 512;  // Bytes of an unexpected reply body quoted in an error.

std::string Echo(const std::string& body) {
  return body.size() <= kMaxEcho ? body : body.substr(0, kMaxEcho) + "...";
}

// A sample value: Prometheus writes numbers as strings ("42", "1.5e+03", "NaN", "+Inf").
Result<double> ParseSampleValue(const nlohmann::json& v) {
  if (!v.is_string()) {
    return Status::Internal("prometheus sample value is not a string: " + v.dump());
  }
  const std::string& text = v.get_ref<const std::string&>();
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return Status::Internal("prometheus sample value \"" + text + "\" is not a number");
  }
  if (!std::isfinite(d)) {
    return Status::Unprocessable("query returned " + text + "; a replica count needs a number");
  }
  return d;
}

// A [timestamp, "value"] pair, as in "value" of a vector sample and in a scalar result.
Result<double> ParsePair(const nlohmann::json& pair) {
  if (!pair.is_array() || pair.size() != 2) {
    return Status::Internal("prometheus sample is not a [time, value] pair: " + pair.dump());
  }
  return ParseSampleValue(pair[1]);
}

Result<double> ParseReply(const http::Response& response) {
  const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  const bool ok_http = response.status >= 200 && response.status < 300;
  if (body.is_object() && body.value("status", "") == "error") {
    const StatusCode code =
        ok_http ? StatusCode::kUnprocessable : StatusCodeForHttp(response.status);
    return Status(code, "prometheus " + body.value("errorType", std::string("error")) + ": " +
                            body.value("error", std::string("(no message)")));
  }
  if (!ok_http) {
    return Status(StatusCodeForHttp(response.status),
                  "prometheus returned HTTP " + std::to_string(response.status) +
                      (response.body.empty() ? "" : ": " + Echo(response.body)));
  }
  if (!body.is_object() || body.value("status", "") != "success") {
    return Status::Internal("prometheus reply is not a success object: " + Echo(response.body));
  }
  const auto data = body.find("data");
  if (data == body.end() || !data->is_object()) {
    return Status::Internal("prometheus reply has no data object: " + Echo(response.body));
  }
  const std::string type = data->value("resultType", "");
  const auto result = data->find("result");
  if (result == data->end()) {
    return Status::Internal("prometheus reply has no data.result: " + Echo(response.body));
  }
  if (type == "scalar") return ParsePair(*result);
  if (type != "vector") {
    return Status::Unprocessable("query returned a " + (type.empty() ? "reply" : type) +
                                 "; it must return one series (instant vector) or a scalar");
  }
  if (!result->is_array()) {
    return Status::Internal("prometheus vector result is not an array: " + Echo(response.body));
  }
  if (result->empty()) return 0.0;  // No series: no load.
  if (result->size() > 1) {
    return Status::Unprocessable("query must return one series; got " +
                                 std::to_string(result->size()) + ": sum() it");
  }
  const nlohmann::json& sample = (*result)[0];
  if (!sample.is_object() || !sample.contains("value")) {
    return Status::Internal("prometheus vector sample has no value: " + sample.dump());
  }
  return ParsePair(sample["value"]);
}

}  // namespace

Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(
    std::string base_url, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    return Status::InvalidArgument("prometheus timeout must be positive");
  }
  http::ClientOptions options;
  options.base_url = base_url;
  options.connect_timeout = timeout;
  options.read_timeout = timeout;
  options.write_timeout = timeout;
  options.max_attempts = 2;
  options.backoff.base_delay = std::chrono::milliseconds(200);
  options.backoff.max_delay = std::chrono::milliseconds(200);
  options.max_retry_after = std::chrono::milliseconds(1000);
  // An autoscaling query returns one vector of a few series; the operator must not buffer a
  // runaway query's megabytes.
  options.max_response_bytes = 16u << 20;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(std::move(options));
  if (!client.ok()) return client.status().WithContext("prometheus URL \"" + base_url + "\"");
  return std::unique_ptr<PrometheusClient>(
      new PrometheusClient(std::move(client).value(), std::move(base_url), timeout));
}

PrometheusClient::PrometheusClient(std::unique_ptr<http::Client> client, std::string base_url,
                                   std::chrono::milliseconds timeout)
    : client_(std::move(client)), base_url_(std::move(base_url)), timeout_(timeout) {}

Result<double> PrometheusClient::QueryScalar(const std::string& promql) {
  const std::string path = "/api/v1/query?query=" + http::PercentEncode(promql) +
                           "&timeout=" + std::to_string(timeout_.count()) + "ms";
  Result<http::Response> response = client_->Get(path);
  if (!response.ok()) return response.status().WithContext("prometheus query");
  return ParseReply(*response);
}

std::string ExpandQuery(const std::string& query, const std::string& pool, const std::string& ns) {
  static const std::string kPool = "$pool";
  static const std::string kNamespace = "$namespace";
  std::string out;
  out.reserve(query.size());
  for (size_t i = 0; i < query.size();) {
    if (query.compare(i, kNamespace.size(), kNamespace) == 0) {
      out += ns;
      i += kNamespace.size();
    } else if (query.compare(i, kPool.size(), kPool) == 0) {
      out += pool;
      i += kPool.size();
    } else {
      out += query[i++];
    }
  }
  return out;
}

}  // namespace sluice::autoscale
