// In-cluster configuration: the API server and credentials a Pod gets from Kubernetes.
//
// The service host and port come from KUBERNETES_SERVICE_HOST/_PORT, which main() reads and
// passes in (nothing below main reads the environment). The token is the projected
// service-account token, given to the client as a file so it is re-read when the kubelet rotates
// it; the CA bundle and namespace come from the same mounted directory. Paths are injectable so
// tests use a temporary directory.
//
// Thread safety: pure function over its inputs (it reads the namespace file once).
#pragma once

#include <string>

#include "common/status.h"
#include "kube/rest_config.h"

namespace sluice::kube {

struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// The same files under `root` (e.g. "/pods/x" -> "/pods/x/var/run/secrets/..."): where a node
// without mount namespaces, as the local cluster's, puts a pod's service-account files.
InClusterPaths InClusterPathsUnder(const std::string& root);

// `service_host` and `service_port` are the values of KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT. Errors: either is empty (not running in a Pod), the token file is
// missing. A missing namespace file means "default".
Result<RestConfig> InClusterConfig(const std::string& service_host, const std::string& service_port,
                                   const InClusterPaths& paths = {});

}  // namespace sluice::kube
