// sluice-apiserver: the local Kubernetes-compatible API server. See docs/local-cluster.md.
//
//   sluice-apiserver --state-dir ~/.sluice/cluster
//   kubectl --kubeconfig ~/.sluice/cluster/kubeconfig get ns
//
// The flags are apiserver_flags.h's; what the program does, and its exit statuses,
// apiserver_program.h's.
#include "localcluster/apiserver/apiserver_program.h"

int main(int argc, char** argv) { return sluice::apiserver::RunApiServer(argc, argv); }
