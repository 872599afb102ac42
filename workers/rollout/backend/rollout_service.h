// ServeRollout: the body of sluice-rollout (main.cpp), one replica of a RolloutPool
// (docs/rollout.md). It loads the hosted policies
// into the built-in engine, then leases tasks from the dataflow, runs their workflows, submits the
// groups and keeps its weights at the versions the trainers announce.
//
// The operator's worker contract (operator/controllers/rolloutpool/desired_pods.h) gives the flags;
// rollout.json (--policy-config) gives the Policies. HTTP: /healthz, /readyz (once every policy
// is loaded, and so are the weight versions announced when it joined), /metrics, GET /v1/status,
// POST /v1/drain, and GET /v1/relay/<policy>/v1/weights/... (the versions this replica holds,
// for its region's peers).
//
// Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT: stop leasing, finish or hand back what is
// in flight), 1 on a runtime failure, 2 for bad flags or config.
//
// Thread safety: called once, from RunService's body (common/service/service_main.h).
#pragma once

#include "common/service/service_main.h"

namespace sluice::rollout {

// Runs the replica with the flags in `svc` (rollout_flags.h); returns the exit status above.
int ServeRollout(service::Service& svc);

}  // namespace sluice::rollout
