// End-to-end: the operator on the local cluster. `sluice up` starts apiserver, node agent and
// sluice-operator; a Dataflow applied with kubectl becomes a running sluice-dataflow pod behind a
// Service, its status fills from the worker, its experiment's NetworkPolicies are made (stored,
// not enforced, here) and removed again by spec.networkPolicy.enabled: false without replacing
// the pod, and deleting it removes the owned children while the write-ahead-log claim stays.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/base64.h"
#include "common/http/client.h"
#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

TEST(OperatorDataflowTest, DataflowBecomesARunningPodWithLiveStatus) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up()) << cluster.up().output;
  ASSERT_EQ(cluster.Apply(kTestDataflowManifest), 0);

  // The pod runs and becomes ready; the Dataflow reports Ready with the worker's counters.
  ASSERT_TRUE(WaitUntil(
      [&] {
        json df = cluster.Get("dataflow arith");
        return df.is_object() && df.value("/status/promptsTotal"_json_pointer, 0) > 0;
      },
      std::chrono::seconds(60)))
      << cluster.Kubectl("get dataflow arith -o yaml").output
      << cluster.Kubectl("describe pod arith-dataflow").output << cluster.Log("operator");
  json df = cluster.Get("dataflow arith");
  EXPECT_EQ(df.value("/status/promptsTotal"_json_pointer, 0), 100);
  EXPECT_EQ(df.value("/status/endpoint"_json_pointer, ""), "https://arith.default.svc:8080");
  EXPECT_EQ(cluster.JsonPath("dataflow arith", "{.status.conditions[?(@.type==\"Ready\")].status}"),
            "True");
  json pod = cluster.Get("pod arith-dataflow");
  EXPECT_EQ(pod.value("/metadata/labels/app.kubernetes.io~1managed-by"_json_pointer, ""),
            "sluice-operator");
  EXPECT_EQ(pod.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "Dataflow");
  EXPECT_EQ(cluster.Kubectl("get svc arith").exit_code, 0);
  EXPECT_EQ(cluster.Kubectl("get pvc arith-wal").exit_code, 0);
  EXPECT_EQ(cluster.JsonPath("secret arith-token", "{.data.token}").size(), 88u);
  // The rollout replicas' narrower token is a Secret of its own, with another value.
  EXPECT_EQ(cluster.JsonPath("secret arith-rollout-token", "{.data.token}").size(), 88u);
  EXPECT_NE(cluster.JsonPath("secret arith-rollout-token", "{.data.token}"),
            cluster.JsonPath("secret arith-token", "{.data.token}"));

  // TLS (operator/controllers/dataflow/dataflow_tls.h): the status above came over HTTPS,
  // verified against the namespace's CA. The CA is the namespace's, owned by no Dataflow; the
  // serving Secret carries that CA, and the ConfigMap the workers mount holds it alone.
  const json ca = cluster.Get("secret sluice-ca");
  ASSERT_TRUE(ca.is_object()) << cluster.Log("operator");
  EXPECT_FALSE(ca.contains("/metadata/ownerReferences"_json_pointer)) << ca.dump(2);
  const json serving = cluster.Get("secret arith-tls");
  ASSERT_TRUE(serving.is_object()) << cluster.Log("operator");
  EXPECT_EQ(serving.value("type", ""), "kubernetes.io/tls");
  EXPECT_EQ(serving.value("/data/ca.crt"_json_pointer, ""),
            ca.value("/data/tls.crt"_json_pointer, "?"));
  const json ca_map = cluster.Get("configmap arith-ca");
  ASSERT_TRUE(ca_map.is_object()) << cluster.Log("operator");
  Result<std::string> ca_pem = Base64Decode(ca.value("/data/tls.crt"_json_pointer, ""));
  ASSERT_TRUE(ca_pem.ok()) << ca.dump(2);
  EXPECT_EQ(ca_map.value("/data/ca.crt"_json_pointer, ""), *ca_pem);
  EXPECT_FALSE(ca_map.contains("/data/tls.key"_json_pointer));
  EXPECT_EQ(pod.value("/spec/containers/0/readinessProbe/httpGet/scheme"_json_pointer, ""),
            "HTTPS");

  // The experiment's NetworkPolicies, one per role, owned by the Dataflow
  // (operator/controllers/network_policies.h).
  for (const std::string role : {"dataflow", "rollout", "trainer"}) {
    const json policy = cluster.Get("networkpolicy arith-" + role + "-ingress");
    ASSERT_TRUE(policy.is_object())
        << role << "\n"
        << cluster.Kubectl("get networkpolicies").output << cluster.Log("operator");
    EXPECT_EQ(policy.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "Dataflow");
    EXPECT_EQ(
        policy.value("/spec/podSelector/matchLabels/app.kubernetes.io~1component"_json_pointer, ""),
        role);
    EXPECT_EQ(policy.value("/spec/podSelector/matchLabels/sluice.dev~1dataflow"_json_pointer, ""),
              "arith");
    EXPECT_EQ(policy.value("/spec/policyTypes"_json_pointer, json()), json::array({"Ingress"}));
  }
  // The dataflow pod, which the policy of its role selects, admits the experiment's rollouts
  // and trainers on its port.
  EXPECT_EQ(pod.value("/metadata/labels/app.kubernetes.io~1component"_json_pointer, ""),
            "dataflow");
  EXPECT_EQ(pod.value("/metadata/labels/sluice.dev~1dataflow"_json_pointer, ""), "arith");
  EXPECT_EQ(
      cluster.JsonPath("networkpolicy arith-dataflow-ingress", "{.spec.ingress[0].ports[0].port}"),
      "8080");
  // kubectl prints them as kube does.
  const CommandResult listed = cluster.Kubectl("get netpol");
  EXPECT_NE(listed.output.find("POD-SELECTOR"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("app.kubernetes.io/component=rollout,sluice.dev/dataflow=arith"),
            std::string::npos)
      << listed.output;

  // Switched off: the operator deletes them, and the dataflow pod stays (the switch is not part
  // of the worker's config).
  const std::string pod_uid = cluster.JsonPath("pod arith-dataflow", "{.metadata.uid}");
  ASSERT_FALSE(pod_uid.empty());
  ASSERT_EQ(cluster
                .Kubectl("patch dataflow arith --type=merge -p "
                         "'{\"spec\":{\"networkPolicy\":{\"enabled\":false}}}'")
                .exit_code,
            0);
  EXPECT_TRUE(WaitUntil([&] {
    for (const char* name :
         {"arith-dataflow-ingress", "arith-rollout-ingress", "arith-trainer-ingress"}) {
      if (cluster.Kubectl(std::string("get networkpolicy ") + name).exit_code == 0) return false;
    }
    return true;
  })) << cluster.Kubectl("get networkpolicies").output
      << cluster.Log("operator");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // A later reconcile would replace it.
  EXPECT_EQ(cluster.JsonPath("pod arith-dataflow", "{.metadata.uid}"), pod_uid);

  // The operator's metrics carry controller-runtime's names.
  http::ClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(cluster.operator_port());
  auto client = http::Client::Create(options);
  ASSERT_TRUE(client.ok());
  auto metrics = (*client)->Get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("controller_runtime_reconcile_total{controller=\"dataflow\""),
            std::string::npos)
      << metrics->body.substr(0, 2000);

  // Deleting the Dataflow removes what it owns; the log's claim stays for the user to delete.
  ASSERT_EQ(cluster.Kubectl("delete dataflow arith --wait=true --timeout=60s").exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return cluster.Kubectl("get pod arith-dataflow").exit_code != 0; },
                        std::chrono::seconds(60)));
  EXPECT_TRUE(WaitUntil([&] { return cluster.Kubectl("get svc arith").exit_code != 0; }));
  EXPECT_EQ(cluster.Kubectl("get pvc arith-wal").exit_code, 0);
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
