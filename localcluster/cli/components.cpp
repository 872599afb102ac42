#include "localcluster/cli/components.h"

#include "api/operator_rbac.h"
#include "localcluster/cli/prometheus_config.h"

namespace sluice::cli {
namespace {

constexpr char kPrometheusListen[] = "127.0.0.1:9090";

HealthCheck HttpHealth(std::string base_url, std::string path) {
  HealthCheck h;
  h.kind = HealthKind::kHttpGet;
  h.base_url = std::move(base_url);
  h.path = std::move(path);
  return h;
}

}  // namespace

std::string HealthCheck::Describe() const {
  switch (kind) {
    case HealthKind::kApiServerReadyz:
      return "/readyz of the API server in " + kubeconfig;
    case HealthKind::kHttpGet:
      return base_url + path;
    case HealthKind::kProcessAlive:
      return "the process staying up";
  }
  return "";
}

const std::vector<KnownComponent>& KnownComponents() {
  static const std::vector<KnownComponent> known = {
      {"apiserver", "sluice-apiserver"},
      {"node", "sluice-node"},
      {"operator", "sluice-operator"},
      {"prometheus", "prometheus"},
  };
  return known;
}

const KnownComponent* FindKnownComponent(std::string_view name) {
  for (const KnownComponent& c : KnownComponents()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string KnownComponentNames() {
  std::string out;
  for (const KnownComponent& c : KnownComponents()) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

ComponentSpec ApiServerComponent(const StateLayout& layout, const std::string& bin_dir, int port) {
  ComponentSpec c;
  c.name = "apiserver";
  c.binary = bin_dir + "/sluice-apiserver";
  c.args = {"--state-dir", layout.ApiServerDir(), "--kubeconfig", layout.Kubeconfig(),
            "--port",      std::to_string(port)};
  c.health.kind = HealthKind::kApiServerReadyz;
  c.health.kubeconfig = layout.Kubeconfig();
  c.installs_crds = true;
  c.dirs = {layout.ApiServerDir()};
  c.remove_before_start = {layout.Kubeconfig()};
  return c;
}

ComponentSpec NodeComponent(const ClusterPlan& plan) {
  ComponentSpec c;
  c.name = "node";
  c.binary = plan.bin_dir + "/sluice-node";
  c.args = {"--kubeconfig",     plan.layout.Kubeconfig(),
            "--cluster-config", plan.cluster_config,
            "--state-dir",      plan.layout.NodeDir(),
            "--port",           std::to_string(plan.node_port),
            "--bin-dir",        plan.bin_dir,
            "--pod-ip-prefix",  plan.pod_ip_prefix};
  // Only with Prometheus: the file is what its `sluice-pods` job discovers the pods from.
  if (plan.prometheus) {
    c.args.insert(c.args.end(), {"--prometheus-targets-file", plan.layout.PrometheusPodTargets()});
  }
  c.health = HttpHealth("http://127.0.0.1:" + std::to_string(plan.node_port), "/readyz");
  c.dirs = {plan.layout.NodeDir()};
  return c;
}

ComponentSpec OperatorComponent(const ClusterPlan& plan) {
  ComponentSpec c;
  c.name = "operator";
  c.binary = plan.bin_dir + "/sluice-operator";
  // Loopback addresses: pods bind their own 127.x addresses and ports, so a wildcard bind here
  // would take the port from them.
  c.args = {"--kubeconfig",
            plan.layout.OperatorKubeconfig(),
            "--leader-election-namespace",
            api::kOperatorNamespace,
            "--metrics-bind-address",
            "127.0.0.1:" + std::to_string(plan.operator_port),
            "--health-probe-bind-address",
            "127.0.0.1:" + std::to_string(plan.operator_port + 1)};
  // The local Prometheus is every autoscaled pool's default (spec.autoscaling.prometheusURL).
  if (plan.prometheus) {
    c.args.insert(c.args.end(), {"--prometheus-url", PrometheusUrl(plan)});
  }
  c.health = HttpHealth("http://127.0.0.1:" + std::to_string(plan.operator_port + 1), "/readyz");
  c.optional = true;
  return c;
}

ComponentSpec PrometheusComponent(const ClusterPlan& plan) {
  ComponentSpec c;
  c.name = "prometheus";
  c.binary = plan.prometheus_binary;
  c.args = {"--config.file=" + plan.layout.PrometheusConfig(),
            "--storage.tsdb.path=" + plan.layout.PrometheusData(),
            "--web.listen-address=127.0.0.1:" + std::to_string(plan.prometheus_port)};
  c.health = HttpHealth(PrometheusUrl(plan), "/-/ready");
  c.dirs = {plan.layout.PrometheusDir(), plan.layout.PrometheusData()};
  PrometheusTargets targets;
  targets.apiserver_port = plan.apiserver_port;
  targets.apiserver_token_file = plan.layout.ApiServerToken();
  targets.apiserver_ca_file = plan.layout.ApiServerCa();
  targets.node_port = plan.node_port;
  targets.pod_targets_file = plan.layout.PrometheusPodTargets();
  targets.scrape_interval = plan.prometheus_scrape_interval;
  c.files = {{plan.layout.PrometheusConfig(), RenderPrometheusConfig(targets)}};
  return c;
}

std::string PrometheusUrl(const ClusterPlan& plan) {
  return "http://127.0.0.1:" + std::to_string(plan.prometheus_port);
}

std::vector<ComponentSpec> PlanComponents(const ClusterPlan& plan) {
  std::vector<ComponentSpec> out = {
      ApiServerComponent(plan.layout, plan.bin_dir, plan.apiserver_port), NodeComponent(plan)};
  if (plan.run_operator) out.push_back(OperatorComponent(plan));
  if (plan.prometheus) out.push_back(PrometheusComponent(plan));
  return out;
}

std::optional<std::string> FlagFromCommandLine(const std::vector<std::string>& argv,
                                               std::string_view name) {
  const std::string flag = "--" + std::string(name);
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) return argv[i].substr(flag.size() + 1);
  }
  return std::nullopt;
}

HealthCheck HealthFromCommandLine(std::string_view component, const StateLayout& layout,
                                  const std::vector<std::string>& argv) {
  HealthCheck h;
  if (component == "apiserver") {
    h.kind = HealthKind::kApiServerReadyz;
    h.kubeconfig = FlagFromCommandLine(argv, "kubeconfig").value_or(layout.Kubeconfig());
  } else if (component == "node") {
    h = HttpHealth("http://127.0.0.1:" + FlagFromCommandLine(argv, "port").value_or("10250"),
                   "/readyz");
  } else if (component == "operator") {
    h = HttpHealth(
        "http://" +
            FlagFromCommandLine(argv, "health-probe-bind-address").value_or("127.0.0.1:18081"),
        "/readyz");
  } else if (component == "prometheus") {
    h = HttpHealth(
        "http://" + FlagFromCommandLine(argv, "web.listen-address").value_or(kPrometheusListen),
        "/-/ready");
  }
  return h;
}

}  // namespace sluice::cli
