// Test helpers that read metrics during the main job's end-to-end runs: the operator's own
// /metrics (a sample by its exact series) and instant queries to the local Prometheus.
//
// Thread safety: functions over their arguments; each call makes its own client.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/http/client.h"
#include "common/http/url.h"
#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {

// Success when Debian's prometheus is installed (scripts/install-deps.sh installs it); the tests
// that need it fail, not skip, without it.
inline ::testing::AssertionResult HavePrometheus() {
  if (std::filesystem::exists("/usr/bin/prometheus")) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "/usr/bin/prometheus is missing (Debian's prometheus package; scripts/"
            "install-deps.sh installs it)";
}

// `sluice up` flags for a Prometheus on `port` that scrapes every second.
inline std::string PrometheusFlags(int port) {
  return "--prometheus --prometheus-scrape-interval 1s --prometheus-port " + std::to_string(port);
}

// The operator's /metrics text; empty when unreachable.
inline std::string OperatorMetrics(const SluiceSession& cluster) {
  http::ClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(cluster.operator_port());
  options.max_attempts = 1;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
  if (!client.ok()) return "";
  Result<http::Response> r = (*client)->Get("/metrics");
  return r.ok() && r->status == 200 ? r->body : "";
}

// The value of the sample `series` (name and labels exactly as exposed) in `metrics`; -1 when
// absent.
inline double Sample(const std::string& metrics, const std::string& series) {
  std::istringstream lines(metrics);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// An instant query's vector from the Prometheus on `prometheus_port`, as (labels, value) pairs;
// empty on any error, with `error` set.
inline std::vector<std::pair<nlohmann::json, double>> PrometheusQuery(int prometheus_port,
                                                                      const std::string& promql,
                                                                      std::string* error) {
  using nlohmann::json;
  http::ClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(prometheus_port);
  options.max_attempts = 1;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
  if (!client.ok()) {
    *error = client.status().ToString();
    return {};
  }
  Result<http::Response> r = (*client)->Get("/api/v1/query?query=" + http::PercentEncode(promql));
  std::vector<std::pair<json, double>> out;
  if (!r.ok() || r->status != 200) {
    *error = r.ok() ? r->body : r.status().ToString();
    return out;
  }
  const json body = json::parse(r->body, nullptr, false);
  for (const json& s : body.value("/data/result"_json_pointer, json::array())) {
    out.emplace_back(s.value("metric", json::object()),
                     std::stod(s.value("/value/1"_json_pointer, std::string("0"))));
  }
  return out;
}

}  // namespace sluice::e2e
