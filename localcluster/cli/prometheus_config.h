// The Prometheus scrape configuration `sluice up --prometheus` writes to
// DIR/prometheus/prometheus.yml before starting /usr/bin/prometheus.
//
// Three jobs, every scrape_interval (15 s by default): `sluice-apiserver` (HTTPS, the API server's
// CA, its bearer token read from the token file on every scrape, so a regenerated token is picked
// up), `sluice-node` (plain HTTP /metrics of the node agent) and `sluice-pods`: the worker pods
// (dataflow, rollout, trainer), found through file-based service discovery (file_sd_configs,
// re-read on change and every 5 s) in the list the node agent keeps of the running pods annotated
// prometheus.io/scrape=true (localcluster/node/scrape_targets.h). That list already carries each
// pod's address, metrics path and target labels (namespace, pod, dataflow, ...), so the job has no
// relabelling; on a real cluster a kubernetes_sd_configs pod job relabels the same annotations
// and labels to the same targets (docs/operator.md, "Scraping the workers"). Strings are written
// as double-quoted YAML scalars (JSON escaping, which YAML accepts), so any state-dir path is
// safe.
//
// Thread safety: a pure function.
#pragma once

#include <chrono>
#include <string>

namespace sluice::cli {

struct PrometheusTargets {
  int apiserver_port = 6443;
  std::string apiserver_token_file;  // DIR/apiserver/token
  std::string apiserver_ca_file;     // DIR/apiserver/pki/ca.crt
  int node_port = 10250;
  std::string pod_targets_file;  // DIR/prometheus/targets/pods.json, written by the node agent.
  // Scrape and rule evaluation interval; written in whole seconds when it is one ("15s"), else
  // in milliseconds ("500ms").
  std::chrono::milliseconds scrape_interval{15000};
};

// The prometheus.yml text.
std::string RenderPrometheusConfig(const PrometheusTargets& targets);

}  // namespace sluice::cli
