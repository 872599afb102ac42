// The Prometheus scrape configuration `sluice up --prometheus` writes to
// DIR/prometheus/prometheus.yml before starting /usr/bin/prometheus.
//
// Two jobs, every 15 s: `sluice-apiserver` (HTTPS, the API server's CA, its bearer token read
// from the token file on every scrape, so a regenerated token is picked up) and `sluice-node`
// (plain HTTP /metrics of the node agent). Strings are written as double-quoted YAML scalars
// (JSON escaping, which YAML accepts), so any state-dir path is safe.
//
// Thread safety: a pure function.
#pragma once

#include <string>

namespace sluice::cli {

struct PrometheusTargets {
  int apiserver_port = 6443;
  std::string apiserver_token_file;  // DIR/apiserver/token
  std::string apiserver_ca_file;     // DIR/apiserver/pki/ca.crt
  int node_port = 10250;
};

// The prometheus.yml text.
std::string RenderPrometheusConfig(const PrometheusTargets& targets);

}  // namespace sluice::cli
