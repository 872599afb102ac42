// Components: the processes of a local cluster, as data.
//
// `sluice up` starts them in order (apiserver, node, operator, prometheus), `sluice down` stops
// them in reverse, `sluice status` and `sluice logs` know them by name. A ComponentSpec says
// everything needed to start one and to tell when it is healthy; PlanComponents builds the list
// from the `up` settings, and each spec is independent, so a test can start one alone
// (ApiServerComponent).
//
// Health checks:
//   kApiServerReadyz  GET /readyz through a RestClient made from the kubeconfig the API server
//                     writes on start (so the check also proves the kubeconfig works).
//   kHttpGet          GET base_url + path answers 2xx (node agent /readyz, Prometheus /-/ready).
//   kProcessAlive     the process is still alive after a short settling delay (the operator,
//                     which serves nothing to probe yet).
//
// Thread safety: pure functions and values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

enum class HealthKind { kProcessAlive, kApiServerReadyz, kHttpGet };

struct HealthCheck {
  HealthKind kind = HealthKind::kProcessAlive;
  std::string kubeconfig;  // kApiServerReadyz.
  std::string base_url;    // kHttpGet: "http://127.0.0.1:10250".
  std::string path;        // kHttpGet: "/readyz".

  // "https://... /readyz via DIR/kubeconfig", for messages.
  std::string Describe() const;
};

struct ComponentSpec {
  std::string name;               // "apiserver": the log, pid and `sluice logs` name.
  std::string binary;             // Absolute path of the program.
  std::vector<std::string> args;  // After argv[0].
  HealthCheck health;
  bool optional = false;          // When the binary is missing: skipped with a note, not an error.
  bool installs_crds = false;     // The API server: the CRDs are installed once it is healthy.
  std::vector<std::string> dirs;  // Created before the start.
  // Files (path, content) written before every start, e.g. the generated prometheus.yml.
  std::vector<std::pair<std::string, std::string>> files;
  // Removed before a fresh start: output the health check waits for (the kubeconfig), so a
  // stale copy from an earlier run is not mistaken for the new one.
  std::vector<std::string> remove_before_start;
};

// A component known by name, whatever settings started it.
struct KnownComponent {
  std::string name;         // "node".
  std::string binary_name;  // "sluice-node": what /proc/PID/exe must end with.
};

// apiserver, node, operator, prometheus: the start order.
const std::vector<KnownComponent>& KnownComponents();
const KnownComponent* FindKnownComponent(std::string_view name);
// "apiserver, node, operator, prometheus".
std::string KnownComponentNames();

struct ClusterPlan {
  StateLayout layout{"/"};
  std::string bin_dir;         // Where sluice-apiserver, sluice-node, sluice-operator live.
  std::string cluster_config;  // The node agent's --cluster-config.
  int apiserver_port = 6443;
  int node_port = 10250;
  int operator_port = 18080;  // The operator's metrics; its health endpoints on the next port.
  std::string pod_ip_prefix = "127.1";  // The node agent's pod addresses.
  bool run_operator = true;             // false: no operator component (`sluice up --no-operator`).
  bool prometheus = false;
  int prometheus_port = 9090;  // Prometheus listens on 127.0.0.1:prometheus_port.
  std::chrono::milliseconds prometheus_scrape_interval{15000};
  std::string prometheus_binary = "/usr/bin/prometheus";
};

ComponentSpec ApiServerComponent(const StateLayout& layout, const std::string& bin_dir, int port);
ComponentSpec NodeComponent(const ClusterPlan& plan);
ComponentSpec OperatorComponent(const ClusterPlan& plan);
ComponentSpec PrometheusComponent(const ClusterPlan& plan);
// "http://127.0.0.1:<prometheus_port>".
std::string PrometheusUrl(const ClusterPlan& plan);

// Every component to start, in order: apiserver, node, operator (optional; with
// plan.run_operator), prometheus (with plan.prometheus).
std::vector<ComponentSpec> PlanComponents(const ClusterPlan& plan);

// The health check of a component that is already running, from its command line (for `sluice
// status`, which does not know the flags `up` was given): the node's --port, Prometheus's
// --web.listen-address.
HealthCheck HealthFromCommandLine(std::string_view component, const StateLayout& layout,
                                  const std::vector<std::string>& argv);

// The value of `--name VALUE` or `--name=VALUE` in argv, if present.
std::optional<std::string> FlagFromCommandLine(const std::vector<std::string>& argv,
                                               std::string_view name);

}  // namespace sluice::cli
