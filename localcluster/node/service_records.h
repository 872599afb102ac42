// Services on the local cluster: their Endpoints and the DNS names the pods' processes resolve.
//
// There is no kube-proxy: a ClusterIP is allocated (from 10.96.0.0/16, for display and for
// clients that read spec.clusterIP) but nothing forwards it. Names are what work: the node agent
// writes a hosts file (common/http/hosts_file.h) naming each ready pod behind a Service under
// `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local` and `<svc>.<ns>`, one line per address, so a
// normal Service resolves to its first ready pod and a headless one (clusterIP None) lists every
// ready pod (LookupAll). A pod with `hostname` and `subdomain` naming a headless Service in its
// namespace also gets `<hostname>.<subdomain>.<ns>.svc[.cluster.local]`, as in kube DNS.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sluice::node {

// Whether the pod's labels satisfy the Service's equality selector (`spec.selector`).
bool SelectorMatches(const nlohmann::json& selector, const nlohmann::json& pod);
// A running pod with an IP whose Ready condition is True and that is not being deleted.
bool PodIsReady(const nlohmann::json& pod);

// The Endpoints object (named after the Service, owned by nobody, as kube's controller makes it)
// for `service` given the pods of its namespace; nullopt for a Service without a selector (its
// Endpoints are the user's). Ready pods go to `addresses`, the others with an IP to
// `notReadyAddresses` (to `addresses` with publishNotReadyAddresses). Ports: each Service port's
// targetPort, a name resolved against the first selected pod's container ports.
std::optional<nlohmann::json> DesiredEndpoints(const nlohmann::json& service,
                                               const std::vector<nlohmann::json>& pods);

// Whether two Endpoints objects serve the same subsets (ignores metadata).
bool SameSubsets(const nlohmann::json& a, const nlohmann::json& b);

// The hosts-file text for every Service and pod given (all namespaces). Deterministic: sorted.
std::string HostsFileText(const std::vector<nlohmann::json>& services,
                          const std::vector<nlohmann::json>& pods);

// The lowest free address of 10.96.0.0/16 (from .1), or "" when all are used.
std::string AllocateClusterIp(const std::set<std::string>& used);

}  // namespace sluice::node
