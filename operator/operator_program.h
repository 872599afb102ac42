// RunOperator: the body of sluice-operator (main.cpp), which reconciles Sluice's custom resources
// into the pods, services and other objects that run an experiment (docs/operator.md). Runs in a
// cluster (in-cluster config from the service account) or against any kubeconfig, e.g. the local
// cluster's (`sluice up` starts it).
//
// With leader election (the default), replicas compete for a Lease and only the holder runs the
// controllers; losing the lease exits the process (it restarts as a candidate), as
// controller-runtime managers do. Metrics (controller_runtime_*, workqueue_*, sluice_*) are served
// on --metrics-bind-address, /healthz and /readyz on --health-probe-bind-address.
//
// Exit status: 0 after a clean shutdown (SIGTERM), 1 for a runtime failure or lost leadership,
// 2 for bad flags.
//
// Thread safety: called once, from main, before any thread starts.
#pragma once

namespace sluice::op {

// Runs the operator with main's arguments (flags: operator_flags.h); returns the exit status
// above.
int RunOperator(int argc, char** argv);

}  // namespace sluice::op
