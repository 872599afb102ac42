// Admission of networking.k8s.io/v1 NetworkPolicies in the local API server: kube-apiserver's
// defaulting and validation of the spec, with kube's messages and field paths, so `kubectl apply`
// of a bad policy fails as on a real cluster. The local cluster stores and serves NetworkPolicies
// but does not enforce them: its pods are host processes sharing one network namespace
// (docs/local-cluster.md, "Differences from a real cluster").
//
// Call DefaultNetworkPolicy on create and update before ValidateNetworkPolicy (kube validates
// updates with the same spec rules). Messages print values as kube does, e.g.
//   spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive
//   spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer
//   spec.policyTypes[0]: Unsupported value: "Both": supported values: "Ingress", "Egress"
// Label selectors are checked as workload selectors are (label_selector.h's messages, which are
// not always kube's). Deliberate differences: ipBlock CIDRs are parsed strictly (kube 1.30's
// ParseCIDRSloppy also accepts IPv4 octets with leading zeros), and a field of the wrong JSON
// type is a 422 naming the field ("must be an array") where kube's decoder answers 400.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "common/openapi/field_error.h"

namespace sluice::apiserver {

// kube's networking/v1 defaults: spec {} and spec.podSelector {} when absent (an empty selector:
// every pod of the namespace); spec.policyTypes ["Ingress"], plus "Egress" when spec.egress has
// rules, when it is absent or empty; every ingress and egress port's protocol "TCP" when absent.
// Set fields, including invalid ones, are left for validation; a non-object `policy` or spec is
// left alone.
void DefaultNetworkPolicy(nlohmann::json& policy);

// kube's ValidateNetworkPolicySpec, in its order: spec.podSelector a valid label selector; per
// ingress (egress) rule, each port (protocol TCP, UDP or SCTP; port a number 1-65535 or an IANA
// service name; endPort only with a numeric port, 1-65535 and not below it) and each peer of
// `from` (`to`): at least one of podSelector, namespaceSelector and ipBlock, ipBlock alone, each
// selector valid, ipBlock.cidr a CIDR and each ipBlock.except a CIDR strictly inside it; then
// spec.policyTypes: at most two, each "Ingress" or "Egress". Fields are paths from the object
// root ("spec.ingress[0].ports[0].port").
openapi::FieldErrors ValidateNetworkPolicy(const nlohmann::json& policy);

}  // namespace sluice::apiserver
