// RunApiServer: the body of sluice-apiserver (main.cpp), the local Kubernetes-compatible API
// server. See docs/local-cluster.md.
//
//   sluice-apiserver --state-dir ~/.sluice/cluster
//   kubectl --kubeconfig ~/.sluice/cluster/kubeconfig get ns
//
// On first start it creates the state directory: the SQLite store, a self-signed CA and serving
// certificate, a bearer token, the key that signs service-account tokens, and a kubeconfig for
// kubectl and the operator.
//
// Exit status: 0 after a clean shutdown (SIGTERM), 1 for a runtime failure, 2 for bad flags.
// Thread safety: called once, from main, before any thread starts.
#pragma once

namespace sluice::apiserver {

// Runs the server with main's arguments (flags: apiserver_flags.h); returns the exit status.
int RunApiServer(int argc, char** argv);

}  // namespace sluice::apiserver
