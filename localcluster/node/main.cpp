// sluice-node: the scheduler and kubelet of the local cluster's simulated nodes
// (docs/local-cluster.md). The flags are node_flags.h's; what the agent does, and its exit
// statuses, node_program.h's.
#include "common/service/service_main.h"
#include "localcluster/node/node_flags.h"
#include "localcluster/node/node_program.h"

int main(int argc, char** argv) {
  using namespace sluice;
  const service::ServiceDefinition program{
      "sluice-node", "node",
      "The local cluster's scheduler and kubelet: registers simulated nodes, binds pods and "
      "runs their containers as local processes. See docs/local-cluster.md.",
      node::NodeFlagSpec()};
  return service::RunService(program, argc, argv, node::ServeNode);
}
