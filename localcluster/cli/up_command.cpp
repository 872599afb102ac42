#include "localcluster/cli/up_command.h"

#include <filesystem>

#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/crd_install.h"
#include "localcluster/cli/ensure_component.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/log_file.h"
#include "localcluster/cli/operator_identity.h"
#include "localcluster/cli/stop_component.h"

namespace sluice::cli {
namespace {

constexpr size_t kLogExcerptLines = 20;

void PrintLogExcerpt(const StateLayout& layout, const std::string& component, std::ostream& err) {
  const std::string path = layout.LogFile(component);
  Result<std::string> tail = ReadLastLines(path, kLogExcerptLines);
  if (!tail.ok()) {
    err << "(no log at " << path << ")\n";
    return;
  }
  err << "--- last " << kLogExcerptLines << " lines of " << path << " ---\n" << *tail;
  if (!tail->empty() && tail->back() != '\n') err << "\n";
  err << "---\n";
}

Status InstallCrdsInto(const StateLayout& layout, std::chrono::milliseconds timeout,
                       std::ostream& out) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<kube::RestClient> client,
                          ClusterClient(layout.Kubeconfig()));
  SLUICE_ASSIGN_OR_RETURN(std::vector<CrdInstallResult> results,
                          InstallCrds(*client, EmbeddedCrds()));
  std::vector<std::string> names;
  for (const CrdInstallResult& r : results) {
    out << "crd/" << r.name << " " << CrdActionName(r.action) << "\n";
    names.push_back(r.name);
  }
  return WaitCrdsEstablished(*client, names, timeout);
}

}  // namespace

int RunUp(const UpOptions& options, std::ostream& out, std::ostream& err) {
  const std::string cwd = CurrentDirectory();
  ClusterPlan plan;
  plan.layout = StateLayout(AbsolutePath(options.state_dir, cwd));
  if (options.bin_dir.empty()) {
    Result<std::string> self = SelfExecutableDir();
    if (!self.ok()) {
      err << "sluice up: " << self.status().message() << "\n";
      return kExitFailure;
    }
    plan.bin_dir = *self;
  } else {
    plan.bin_dir = AbsolutePath(options.bin_dir, cwd);
  }
  plan.apiserver_port = options.apiserver_port;
  plan.node_port = options.node_port;
  plan.operator_port = options.operator_port;
  plan.pod_ip_prefix = options.pod_ip_prefix;
  plan.run_operator = options.run_operator;
  plan.prometheus = options.prometheus;
  plan.prometheus_port = options.prometheus_port;
  plan.prometheus_scrape_interval = options.prometheus_scrape_interval;
  // Preflight: the programs first (a wrong --bin-dir is the likelier mistake), then the cluster
  // description, before anything starts.
  for (const ComponentSpec& c : PlanComponents(plan)) {
    if (!c.optional && !IsExecutableFile(c.binary)) {
      err << "sluice up: cannot start " << c.name << ": " << c.binary
          << " does not exist or is not executable"
          << (c.binary.rfind(plan.bin_dir, 0) == 0 ? " (build it, or pass --bin-dir DIR)" : "")
          << "\n";
      return kExitFailure;
    }
  }
  Result<std::string> cluster_config = FindClusterConfig(options.cluster_config, plan.bin_dir, cwd);
  if (!cluster_config.ok()) {
    err << "sluice up: " << cluster_config.status().message() << "\n";
    return options.cluster_config.empty() ? kExitFailure : kExitUsage;
  }
  plan.cluster_config = *cluster_config;
  const std::vector<ComponentSpec> components = PlanComponents(plan);
  std::error_code ec;
  std::filesystem::create_directories(plan.layout.root(), ec);
  if (ec) {
    err << "sluice up: flag --state-dir: cannot create " << plan.layout.root() << ": "
        << ec.message() << "\n";
    return kExitUsage;
  }

  const std::chrono::milliseconds timeout = options.timeout;
  std::vector<const ComponentSpec*> started;
  auto fail = [&](const ComponentSpec& c, const Status& status) {
    err << "sluice up: " << c.name << ": " << status.message() << "\n";
    PrintLogExcerpt(plan.layout, c.name, err);
    for (auto it = started.rbegin(); it != started.rend(); ++it) {
      const KnownComponent* known = FindKnownComponent((*it)->name);
      const KnownComponent fallback{(*it)->name,
                                    std::filesystem::path((*it)->binary).filename().string()};
      StopReport report = StopComponent(known != nullptr ? *known : fallback, plan.layout,
                                        std::chrono::seconds(10));
      err << "sluice up: rolling back: " << DescribeStop((*it)->name, report) << "\n";
    }
    return kExitFailure;
  };

  for (const ComponentSpec& c : components) {
    if (c.name == "operator") {
      // Least privilege: the operator runs as its ServiceAccount, with only its RBAC table.
      Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(plan.layout.Kubeconfig());
      Status identity =
          client.ok() ? EnsureOperatorIdentity(**client, plan.layout) : client.status();
      if (!identity.ok()) return fail(c, identity.WithContext("the operator's ServiceAccount"));
    }
    Result<EnsureResult> result = EnsureComponent(c, plan.layout, timeout, out);
    if (!result.ok()) return fail(c, result.status());
    if (result->outcome == EnsureOutcome::kStarted) started.push_back(&c);
    if (c.installs_crds && result->outcome != EnsureOutcome::kSkipped) {
      if (Status s = InstallCrdsInto(plan.layout, timeout, out); !s.ok()) {
        return fail(c, s.WithContext("installing the CRDs"));
      }
    }
  }

  const std::string state_flag =
      options.state_dir_given ? " --state-dir " + plan.layout.root() : std::string();
  out << "\nThe local cluster is up (state in " << plan.layout.root() << "):\n"
      << "  export KUBECONFIG=" << plan.layout.Kubeconfig() << "\n"
      << "  kubectl get nodes\n"
      << "  sluice status" << state_flag << "\n";
  if (plan.prometheus) out << "Prometheus: " << PrometheusUrl(plan) << "\n";
  out << "Stop it with: sluice down" << state_flag << "\n";
  return kExitOk;
}

}  // namespace sluice::cli
