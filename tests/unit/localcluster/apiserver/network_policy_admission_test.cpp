// Tests of NetworkPolicy admission (network_policy_admission.h): kube's defaults, and kube's
// validation messages and field paths, one case per rule.
#include "localcluster/apiserver/network_policy_admission.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/builtin_admission.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// A valid policy: the workers of one experiment admit its rollout pods on 8080.
json Policy() {
  return json::parse(R"({
    "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
    "metadata": {"name": "arith-dataflow-ingress", "namespace": "default"},
    "spec": {
      "podSelector": {"matchLabels": {"app.kubernetes.io/component": "dataflow"}},
      "policyTypes": ["Ingress"],
      "ingress": [{"from": [{"podSelector": {"matchLabels": {"sluice.dev/dataflow": "arith"}}}],
                   "ports": [{"protocol": "TCP", "port": 8080}]}]}})");
}

TEST(NetworkPolicyAdmissionTest, DefaultsAsKube) {
  json bare = {{"metadata", {{"name", "deny-all"}}}};
  DefaultNetworkPolicy(bare);
  EXPECT_EQ(bare["spec"], json::parse(R"({"podSelector": {}, "policyTypes": ["Ingress"]})"));
  EXPECT_TRUE(ValidateNetworkPolicy(bare).empty());

  // Egress rules add Egress; ports get TCP; what is set stays.
  json both = json::parse(R"({"spec": {"podSelector": null, "policyTypes": [],
      "ingress": [{"ports": [{"port": 53}, {"port": 53, "protocol": "UDP"}]}],
      "egress": [{"ports": [{"port": "dns"}]}]}})");
  DefaultNetworkPolicy(both);
  EXPECT_EQ(both["spec"]["podSelector"], json::object());
  EXPECT_EQ(both["spec"]["policyTypes"], json::array({"Ingress", "Egress"}));
  EXPECT_EQ(both["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
  EXPECT_EQ(both["spec"]["ingress"][0]["ports"][1]["protocol"], "UDP");
  EXPECT_EQ(both["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");

  json egress_only = json::parse(R"({"spec": {"policyTypes": ["Egress"], "egress": []}})");
  DefaultNetworkPolicy(egress_only);
  EXPECT_EQ(egress_only["spec"]["policyTypes"], json::array({"Egress"}));

  json valid = Policy();
  DefaultNetworkPolicy(valid);
  EXPECT_EQ(valid, Policy());  // Nothing to add to a complete policy.
  EXPECT_TRUE(ValidateNetworkPolicy(valid).empty());
}

struct ValidationCase {
  const char* name;
  json spec_patch;  // Merged into Policy()'s spec before validation.
  std::vector<openapi::FieldError> errors;
};

class NetworkPolicyValidationTest : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(NetworkPolicyValidationTest, ReportsKubesErrors) {
  const ValidationCase& c = GetParam();
  json policy = Policy();
  policy["spec"].merge_patch(c.spec_patch);
  EXPECT_EQ(ValidateNetworkPolicy(policy), c.errors);
}

// The first ingress rule with `rule` merged in.
json Ingress(const char* rule) {
  json base = Policy()["spec"]["ingress"][0];
  base.merge_patch(json::parse(rule));
  return {{"ingress", json::array({base})}};
}

INSTANTIATE_TEST_SUITE_P(
    Specs, NetworkPolicyValidationTest,
    ::testing::Values(
        ValidationCase{"Valid", json::object(), {}},
        ValidationCase{"NamedPort", Ingress(R"({"ports": [{"port": "http-metrics"}]})"), {}},
        ValidationCase{"PortRange", Ingress(R"({"ports": [{"port": 8000, "endPort": 8080}]})"), {}},
        ValidationCase{"AllPortsAndPeers", Ingress(R"({"ports": null, "from": null})"), {}},
        ValidationCase{"PortOutOfRange",
                       Ingress(R"({"ports": [{"port": 70000}]})"),
                       {{"spec.ingress[0].ports[0].port",
                         "Invalid value: 70000: must be between 1 and 65535, inclusive"}}},
        ValidationCase{"PortZero",
                       Ingress(R"({"ports": [{"port": 0}]})"),
                       {{"spec.ingress[0].ports[0].port",
                         "Invalid value: 0: must be between 1 and 65535, inclusive"}}},
        ValidationCase{"BadProtocol",
                       Ingress(R"({"ports": [{"protocol": "ICMP", "port": 80}]})"),
                       {{"spec.ingress[0].ports[0].protocol",
                         "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", "
                         "\"SCTP\""}}},
        ValidationCase{"EndPortBelowPort",
                       Ingress(R"({"ports": [{"port": 8080, "endPort": 80}]})"),
                       {{"spec.ingress[0].ports[0].endPort",
                         "Invalid value: 80: must be greater than or equal to `port`"}}},
        ValidationCase{"EndPortOutOfRange",
                       Ingress(R"({"ports": [{"port": 8080, "endPort": 70000}]})"),
                       {{"spec.ingress[0].ports[0].endPort",
                         "Invalid value: 70000: must be between 1 and 65535, inclusive"}}},
        ValidationCase{"EndPortWithNamedPort",
                       Ingress(R"({"ports": [{"port": "http", "endPort": 9000}]})"),
                       {{"spec.ingress[0].ports[0].endPort",
                         "Invalid value: 9000: may not be specified when `port` is non-numeric"}}},
        ValidationCase{"EndPortWithoutPort",
                       Ingress(R"({"ports": [{"endPort": 9000}]})"),
                       {{"spec.ingress[0].ports[0].endPort",
                         "Invalid value: 9000: may not be specified when `port` is not "
                         "specified"}}},
        ValidationCase{
            "BadPortName",
            Ingress(R"({"ports": [{"port": "Metrics--port-name"}]})"),
            {{"spec.ingress[0].ports[0].port",
              "Invalid value: \"Metrics--port-name\": must be no more than 15 characters"},
             {"spec.ingress[0].ports[0].port",
              "Invalid value: \"Metrics--port-name\": must contain only alpha-numeric characters "
              "(a-z, 0-9), and hyphens (-)"},
             {"spec.ingress[0].ports[0].port",
              "Invalid value: \"Metrics--port-name\": must not contain consecutive hyphens"}}},
        ValidationCase{"DigitsAreNotAPortName",
                       Ingress(R"({"ports": [{"port": "8080"}]})"),
                       {{"spec.ingress[0].ports[0].port",
                         "Invalid value: \"8080\": must contain at least one letter (a-z)"}}},
        ValidationCase{"EmptyPeer",
                       Ingress(R"({"from": [{}]})"),
                       {{"spec.ingress[0].from[0]", "Required value: must specify a peer"}}},
        ValidationCase{"IpBlockWithSelector",
                       Ingress(R"({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"},
                                             "namespaceSelector": {}}]})"),
                       {{"spec.ingress[0].from[0]",
                         "Forbidden: may not specify both ipBlock and another peer"}}},
        ValidationCase{"NamespaceAndPodSelectorsTogether",
                       Ingress(R"({"from": [{"namespaceSelector": {},
                                             "podSelector": {"matchLabels": {"a": "b"}}}]})"),
                       {}},
        ValidationCase{"IpBlockWithExcept",
                       Ingress(R"({"from": [{"ipBlock": {"cidr": "10.0.0.0/8",
                                                         "except": ["10.1.0.0/16"]}}]})"),
                       {}},
        ValidationCase{"IpBlockWithoutCidr",
                       Ingress(R"({"from": [{"ipBlock": {"except": ["10.1.0.0/16"]}}]})"),
                       {{"spec.ingress[0].from[0].ipBlock.cidr", "Required value"}}},
        ValidationCase{"IpBlockBadCidr",
                       Ingress(R"({"from": [{"ipBlock": {"cidr": "10.0.0.0"}}]})"),
                       {{"spec.ingress[0].from[0].ipBlock.cidr",
                         "Invalid value: \"10.0.0.0\": not a valid CIDR"}}},
        ValidationCase{"ExceptOutsideCidr",
                       Ingress(R"({"from": [{"ipBlock": {"cidr": "10.0.0.0/8",
                           "except": ["192.168.0.0/16", "10.0.0.0/8", "fd00::/8"]}}]})"),
                       {{"spec.ingress[0].from[0].ipBlock.except[0]",
                         "Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`"},
                        {"spec.ingress[0].from[0].ipBlock.except[1]",
                         "Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`"},
                        {"spec.ingress[0].from[0].ipBlock.except[2]",
                         "Invalid value: \"fd00::/8\": must be a strict subset of `cidr`"}}},
        ValidationCase{"Ipv6Block",
                       Ingress(R"({"from": [{"ipBlock": {"cidr": "2001:db8::/32",
                                                         "except": ["2001:db8:1::/48"]}}]})"),
                       {}},
        ValidationCase{"BadPeerSelector",
                       Ingress(R"({"from": [{"podSelector": {"matchExpressions": [
                           {"key": "tier", "operator": "Near"}]}}]})"),
                       {{"spec.ingress[0].from[0].podSelector.matchExpressions[0].operator",
                         "\"Near\" is not a valid label selector operator"}}},
        ValidationCase{"EgressPeersAreChecked",
                       {{"egress", json::parse(R"([{"to": [{}], "ports": [{"port": -1}]}])")}},
                       {{"spec.egress[0].ports[0].port",
                         "Invalid value: -1: must be between 1 and 65535, inclusive"},
                        {"spec.egress[0].to[0]", "Required value: must specify a peer"}}},
        ValidationCase{"UnknownPolicyType",
                       {{"policyTypes", {"Ingress", "Both"}}},
                       {{"spec.policyTypes[1]",
                         "Unsupported value: \"Both\": supported values: \"Ingress\", "
                         "\"Egress\""}}},
        ValidationCase{"ThreePolicyTypes",
                       {{"policyTypes", {"Ingress", "Egress", "Ingress"}}},
                       {{"spec.policyTypes",
                         "Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", "
                         "\"Ingress\"}: may not specify more than two policyTypes"}}},
        ValidationCase{"PodSelectorMustBeAnObject",
                       {{"podSelector", "app=web"}},
                       {{"spec.podSelector", "Invalid value: \"app=web\": must be an object"}}},
        ValidationCase{"IngressMustBeAList",
                       {{"ingress", {{"from", json::array()}}}},
                       {{"spec.ingress", "Invalid value: {\"from\":[]}: must be an array"}}}),
    [](const ::testing::TestParamInfo<ValidationCase>& info) { return info.param.name; });

TEST(NetworkPolicyAdmissionTest, TheApiServerAdmitsNetworkPoliciesThroughOneCall) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo* info = registry.Find("networking.k8s.io", "v1", "networkpolicies");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->kind, "NetworkPolicy");
  EXPECT_TRUE(info->namespaced);
  EXPECT_EQ(info->short_names, std::vector<std::string>{"netpol"});

  // ports: [{}] (every port) is valid; only its protocol is defaulted.
  json created =
      json::parse(R"({"metadata": {"name": "p"}, "spec": {"ingress": [{"ports": [{}]}]}})");
  EXPECT_TRUE(DefaultAndValidateBuiltin(*info, created, nullptr).empty());
  EXPECT_EQ(created["spec"]["policyTypes"], json::array({"Ingress"}));
  EXPECT_EQ(created["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");

  // An update is checked with the same rules.
  json updated = created;
  updated["spec"]["ingress"][0]["ports"][0]["port"] = 0;
  const openapi::FieldErrors errors = DefaultAndValidateBuiltin(*info, updated, &created);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "spec.ingress[0].ports[0].port");

  // Deployments and ReplicaSets keep workload_admission.h's rules, updates included.
  const ResourceInfo* deployments = registry.Find("apps", "v1", "deployments");
  ASSERT_NE(deployments, nullptr);
  json web = json::parse(R"({"metadata": {"name": "web"}, "spec": {
      "selector": {"matchLabels": {"app": "web"}},
      "template": {"metadata": {"labels": {"app": "web"}}}}})");
  EXPECT_TRUE(DefaultAndValidateBuiltin(*deployments, web, nullptr).empty());
  EXPECT_EQ(web["spec"]["replicas"], 1);
  json moved = web;
  moved["spec"]["selector"]["matchLabels"]["app"] = "api";
  moved["spec"]["template"]["metadata"]["labels"]["app"] = "api";
  const openapi::FieldErrors immutable = DefaultAndValidateBuiltin(*deployments, moved, &web);
  ASSERT_EQ(immutable.size(), 1u);
  EXPECT_EQ(immutable[0].field, "spec.selector");
  json replica_set = {{"metadata", {{"name", "rs"}}}, {"spec", json::object()}};
  const openapi::FieldErrors unselected =
      DefaultAndValidateBuiltin(*registry.Find("apps", "v1", "replicasets"), replica_set, nullptr);
  ASSERT_FALSE(unselected.empty());
  EXPECT_EQ(unselected[0], (openapi::FieldError{"spec.selector", "Required value"}));
  EXPECT_EQ(replica_set["spec"]["replicas"], 1);

  // Other built-ins and CRDs pass untouched.
  json lease = {{"metadata", {{"name", "l"}}}};
  const json before = lease;
  EXPECT_TRUE(DefaultAndValidateBuiltin(*registry.Find("coordination.k8s.io", "v1", "leases"),
                                        lease, nullptr)
                  .empty());
  EXPECT_EQ(lease, before);
  ResourceInfo crd_in_builtin_group = *info;
  crd_in_builtin_group.crd_name = "networkpolicies.networking.k8s.io";
  json custom = {{"spec", {{"policyTypes", {"Ingress", "Egress", "Both"}}}}};
  EXPECT_TRUE(DefaultAndValidateBuiltin(crd_in_builtin_group, custom, nullptr).empty());
}

}  // namespace
}  // namespace sluice::apiserver
