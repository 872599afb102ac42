#include "kube/in_cluster.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::kube {

InClusterPaths InClusterPathsUnder(const std::string& root) {
  InClusterPaths paths;
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  paths.token_file = base + paths.token_file;
  paths.ca_file = base + paths.ca_file;
  paths.namespace_file = base + paths.namespace_file;
  return paths;
}

Result<RestConfig> InClusterConfig(const std::string& service_host, const std::string& service_port,
                                   const InClusterPaths& paths) {
  if (service_host.empty() || service_port.empty()) {
    return Status::NotFound(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  std::error_code ec;
  if (!std::filesystem::exists(paths.token_file, ec)) {
    return Status::NotFound("in-cluster service-account token " + paths.token_file +
                            " does not exist");
  }
  RestConfig rc;
  const bool v6 = service_host.find(':') != std::string::npos;
  rc.host = "https://" + (v6 ? "[" + service_host + "]" : service_host) + ":" + service_port;
  rc.token_file = paths.token_file;
  if (std::filesystem::exists(paths.ca_file, ec)) rc.tls.ca_file = paths.ca_file;
  std::ifstream ns(paths.namespace_file);
  if (ns) {
    std::stringstream buf;
    buf << ns.rdbuf();
    std::string value = buf.str();
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
      value.pop_back();
    }
    if (!value.empty()) rc.default_namespace = value;
  }
  return rc;
}

}  // namespace sluice::kube
