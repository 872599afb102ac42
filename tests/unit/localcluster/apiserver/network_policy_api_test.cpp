// NetworkPolicies through the local API server's HTTP API: served at networking.k8s.io/v1
// (short name netpol), defaulted and validated on create and update as kube-apiserver does
// (network_policy_admission.h), printed as kube prints them (network_policy_table.h). On an
// in-process server (in_process_api_server.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/unit/localcluster/apiserver/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kPolicies[] = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";

using NetworkPolicyApiTest = InProcessApiServerTest;

json Policy(const std::string& name, const json& port) {
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"podSelector", {{"matchLabels", {{"app", "web"}}}}},
            {"ingress", json::array({{{"ports", json::array({{{"port", port}}})}}})}}}};
}

TEST_F(NetworkPolicyApiTest, ServedDefaultedValidatedAndPrinted) {
  const http::Response discovery = Get("/apis/networking.k8s.io/v1");
  ASSERT_EQ(discovery.status, 200) << discovery.body;
  bool found = false;
  for (const json& r : Body(discovery).value("resources", json::array())) {
    if (r.value("name", "") != "networkpolicies") continue;
    found = true;
    EXPECT_EQ(r.value("kind", ""), "NetworkPolicy");
    EXPECT_TRUE(r.value("namespaced", false));
    EXPECT_EQ(r.value("shortNames", json()), json::array({"netpol"}));
  }
  EXPECT_TRUE(found) << discovery.body;

  // Created with kube's defaults filled in.
  const http::Response created = Post(kPolicies, Policy("web", 8080));
  ASSERT_EQ(created.status, 201) << created.body;
  const json stored = Body(created);
  EXPECT_EQ(stored.value("/spec/policyTypes"_json_pointer, json()), json::array({"Ingress"}));
  EXPECT_EQ(stored.value("/spec/ingress/0/ports/0/protocol"_json_pointer, ""), "TCP");

  // Refused with kube's 422, naming the field.
  const http::Response refused = Post(kPolicies, Policy("bad", 70000));
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(Body(refused).value("message", ""),
            "NetworkPolicy.networking.k8s.io \"bad\" is invalid: spec.ingress[0].ports[0].port: "
            "Invalid value: 70000: must be between 1 and 65535, inclusive");
  EXPECT_EQ(Body(refused).value("/details/causes/0/field"_json_pointer, ""),
            "spec.ingress[0].ports[0].port");

  // Updates are validated too.
  json update = stored;
  update["spec"]["policyTypes"] = json::array({"Sideways"});
  const http::Response updated = Send(*admin_, "PUT", std::string(kPolicies) + "/web", update);
  EXPECT_EQ(updated.status, 422) << updated.body;
  EXPECT_EQ(Body(updated).value("/details/causes/0/field"_json_pointer, ""), "spec.policyTypes[0]");

  // kubectl get networkpolicies: NAME, POD-SELECTOR, AGE.
  const http::Response table =
      Send(*admin_, "GET", kPolicies, nullptr,
           {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(table.status, 200) << table.body;
  const json t = Body(table);
  ASSERT_EQ(t.value("columnDefinitions", json::array()).size(), 3u) << table.body;
  EXPECT_EQ(t["columnDefinitions"][1]["name"], "Pod-Selector");
  ASSERT_EQ(t.value("rows", json::array()).size(), 1u) << table.body;
  EXPECT_EQ(t["rows"][0]["cells"][0], "web");
  EXPECT_EQ(t["rows"][0]["cells"][1], "app=web");
}

}  // namespace
}  // namespace sluice::apiserver
