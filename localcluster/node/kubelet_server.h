// The kubelet endpoint of sluice-node: the routes the API server calls on a node.
//
//   GET /containerLogs/{namespace}/{pod}/{container}   the container's log (kubectl logs), with
//       follow, previous, tailLines, timestamps, sinceSeconds, sinceTime, limitBytes
//
// Health (/healthz, /readyz) and /metrics come with http::Server. Every simulated node
// publishes this one endpoint (Node status.addresses InternalIP and daemonEndpoints).
//
// Thread safety: handlers run on the server's worker threads; `agent` is called on each request
// and may return null until the agent is constructed (503).
#pragma once

#include <functional>

#include "common/http/server.h"
#include "localcluster/node/node_agent.h"

namespace sluice::node {

void RegisterKubeletRoutes(http::Server& server, std::function<const NodeAgent*()> agent);

}  // namespace sluice::node
