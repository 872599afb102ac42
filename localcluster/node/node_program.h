// ServeNode: the body of sluice-node (main.cpp), the scheduler and kubelet of the local cluster's
// simulated nodes (docs/local-cluster.md). Registers the nodes of --cluster-config with the API
// server named by
// --kubeconfig, binds pending pods, runs each pod's containers as local processes, and serves
// their logs (the API server proxies `kubectl logs` here) until SIGTERM; then it stops the
// processes (SIGTERM, --shutdown-grace, SIGKILL) and exits. Pods stay in the API; a restarted
// agent restarts their containers.
//
// Exit status: 0 after a clean shutdown, 1 for a runtime failure, 2 for bad flags or config.
//
// Thread safety: called once, from RunService's body (common/service/service_main.h).
#pragma once

#include "common/service/service_main.h"

namespace sluice::node {

// Runs the agent with the flags in `svc` (node_flags.h); returns the exit status above.
int ServeNode(service::Service& svc);

}  // namespace sluice::node
