#include "localcluster/cli/node_command.h"

#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/node_actions.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

int RunNode(const NodeOptions& options, std::ostream& out, std::ostream& err) {
  const StateLayout layout(AbsolutePath(options.state_dir, CurrentDirectory()));
  Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(layout.Kubeconfig());
  if (!client.ok()) {
    err << "sluice node: " << client.status().message() << "\n";
    return kExitFailure;
  }
  if (Status s = RunNodeAction(**client, options.action, options.node, out); !s.ok()) {
    err << "sluice node " << NodeActionName(options.action) << ": " << s.message() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace sluice::cli
