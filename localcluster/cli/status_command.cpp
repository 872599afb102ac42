#include "localcluster/cli/status_command.h"

#include "kube/dynamic_client.h"
#include "kube/errors.h"
#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/components.h"
#include "localcluster/cli/health.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/pid_file.h"
#include "localcluster/cli/status_report.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

std::vector<json> Items(const kube::ObjectList& list) {
  std::vector<json> out;
  for (const auto& item : list.items) out.push_back(*item);
  return out;
}

}  // namespace

int RunStatus(const StatusOptions& options, std::ostream& out, std::ostream& err) {
  const StateLayout layout(AbsolutePath(options.state_dir, CurrentDirectory()));
  std::vector<ComponentRow> rows;
  bool apiserver_running = false;
  for (const KnownComponent& c : KnownComponents()) {
    const PidFileState state = InspectPidFile(layout.PidFile(c.name), c.binary_name);
    std::string text = "stopped";
    if (state.running()) {
      const std::string pid = "(pid " + std::to_string(state.pid) + ")";
      Status health = ProbeHealth(HealthFromCommandLine(c.name, layout, state.argv));
      text = health.ok() ? "running " + pid : "unhealthy " + pid + ": " + health.message();
      if (c.name == "apiserver") apiserver_running = true;
    } else if (state.stale()) {
      text = "stopped (stale pid file)";
    }
    rows.push_back({c.name, text});
  }
  out << "State: " << layout.root() << "\n\n" << RenderComponents(rows);
  if (!apiserver_running) {
    err << "sluice status: the API server is not running (start the cluster with `sluice up`)\n";
    return kExitFailure;
  }

  Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(layout.Kubeconfig());
  if (!client.ok()) {
    err << "sluice status: " << client.status().message() << "\n";
    return kExitFailure;
  }
  kube::DynamicClient dynamic(**client);
  Result<kube::ObjectList> nodes = dynamic.Resource({"", "v1", "nodes", false}).ListAll();
  if (!nodes.ok()) {
    err << "sluice status: listing nodes: " << nodes.status().message() << "\n";
    return kExitFailure;
  }
  out << "\n" << RenderNodes(Items(*nodes));

  std::vector<ResourceCount> counts;
  for (const char* resource : {"policies", "rolloutpools", "dataflows", "trainerjobs"}) {
    Result<kube::ObjectList> list =
        dynamic.Resource({"sluice.dev", "v1alpha1", resource, true}, "").ListAll();
    if (list.ok()) {
      counts.push_back(
          CountResources(resource, Items(*list), std::string(resource) == "trainerjobs"));
    } else {
      ResourceCount c;
      c.resource = resource;
      c.note = kube::IsNotFound(list.status()) ? "CRD not installed" : list.status().message();
      counts.push_back(c);
    }
  }
  out << "\n" << RenderResourceCounts(counts);
  return kExitOk;
}

}  // namespace sluice::cli
