// The core objects the operator uses, as GroupVersionResources, and typed shorthands over the
// dynamic client: `Pods(client, "ns").Get("x")`. Objects stay JSON (nlohmann::json); these only
// fix the resource so call sites cannot misspell it.
//
// Thread safety: constants and small values.
#pragma once

#include <string>

#include "kube/dynamic_client.h"

namespace sluice::kube {

inline const GroupVersionResource kPods{"", "v1", "pods", true};
inline const GroupVersionResource kServices{"", "v1", "services", true};
inline const GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};
inline const GroupVersionResource kSecrets{"", "v1", "secrets", true};
inline const GroupVersionResource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims", true};
inline const GroupVersionResource kEvents{"", "v1", "events", true};
inline const GroupVersionResource kNamespaces{"", "v1", "namespaces", false};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const GroupVersionResource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies",
                                                   true};

inline ResourceClient Pods(DynamicClient& c, const std::string& ns) {
  return c.Resource(kPods, ns);
}
inline ResourceClient Services(DynamicClient& c, const std::string& ns) {
  return c.Resource(kServices, ns);
}
inline ResourceClient ConfigMaps(DynamicClient& c, const std::string& ns) {
  return c.Resource(kConfigMaps, ns);
}
inline ResourceClient Secrets(DynamicClient& c, const std::string& ns) {
  return c.Resource(kSecrets, ns);
}
inline ResourceClient PersistentVolumeClaims(DynamicClient& c, const std::string& ns) {
  return c.Resource(kPersistentVolumeClaims, ns);
}
inline ResourceClient Events(DynamicClient& c, const std::string& ns) {
  return c.Resource(kEvents, ns);
}
inline ResourceClient Leases(DynamicClient& c, const std::string& ns) {
  return c.Resource(kLeases, ns);
}
inline ResourceClient Namespaces(DynamicClient& c) { return c.Resource(kNamespaces); }

}  // namespace sluice::kube
