// End-to-end: the RolloutPool controller on the local cluster, with sluice-testpod standing in
// for the rollout worker (spec.engine.image sluice/testpod:dev in its worker mode: /v1/status
// and /v1/drain). Replicas are placed over two regions by weight, scaling down drains before
// deleting, and deleting the pool drains every replica through the sluice.dev/drain finalizer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace operator_rolloutpool_test {

using nlohmann::json;

constexpr char kPool[] = R"(apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: pool
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: builtin, image: "sluice/testpod:dev"}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env:
      - {name: SLUICE_TESTPOD_MODE, value: worker}
      - {name: SLUICE_TESTPOD_IN_FLIGHT, value: "3"}
  replicas: 3
  drain: {gracePeriodSeconds: 20}
  placement:
    strategy: Spread
    regions:
      - name: east
        nodeSelector: {topology.kubernetes.io/region: local-us-east}
        weight: 2
      - name: west
        nodeSelector: {topology.kubernetes.io/region: local-eu-west}
        weight: 1
)";

TEST(OperatorRolloutPoolTest, PlacesReplicasByRegionDrainsOnScaleDownAndOnDelete) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up()) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto get = [&](const std::string& what) { return cluster.Get(what); };
  auto log_of = [&](const std::string& component) { return cluster.Log(component); };
  auto pool_pods = [&] { return get("pods -l sluice.dev/pool=pool"); };
  ASSERT_EQ(cluster.Apply(std::string(kTestDataflowManifest) + "---\n" + kPool), 0);

  // Three replicas, two in the east (weight 2), one in the west, all ready.
  ASSERT_TRUE(WaitUntil(
      [&] {
        json pool = get("rolloutpool pool");
        return pool.is_object() && pool.value("/status/readyReplicas"_json_pointer, 0) == 3;
      },
      std::chrono::seconds(90)))
      << kubectl("get rolloutpool pool -o yaml").output << kubectl("get pods -o wide").output
      << log_of("operator");
  json pods = pool_pods();
  int east = 0, west = 0;
  for (const json& p : pods["items"]) {
    const std::string region = p.value("/metadata/labels/sluice.dev~1region"_json_pointer, "");
    const std::string node = p.value("/spec/nodeName"_json_pointer, "");
    if (region == "east") {
      ++east;
      EXPECT_TRUE(node == "east-gpu" || node == "east-cpu") << node;
    } else if (region == "west") {
      ++west;
      EXPECT_TRUE(node == "west-gpu" || node == "west-cpu") << node;
    }
    EXPECT_EQ(p.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "RolloutPool");
  }
  EXPECT_EQ(east, 2);
  EXPECT_EQ(west, 1);
  // The operator reads each replica's GET /v1/status (100 tokens/s from each stand-in) over
  // HTTPS at its pod IP, verifying the pool's certificate under the pool's role name.
  EXPECT_TRUE(WaitUntil([&] {
    return get("rolloutpool pool").value("/status/tokensPerSecond"_json_pointer, 0.0) == 300.0;
  })) << kubectl("get rolloutpool pool -o yaml").output
      << log_of("operator");
  const json serving = get("secret pool-rollout-tls");
  EXPECT_EQ(serving.value("type", ""), "kubernetes.io/tls") << serving.dump();
  EXPECT_EQ(serving.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "RolloutPool");
  json pool = get("rolloutpool pool");
  EXPECT_EQ(pool.value("/status/replicas"_json_pointer, 0), 3);
  EXPECT_NE(pool.value("/status/selector"_json_pointer, "").find("sluice.dev/pool=pool"),
            std::string::npos);
  EXPECT_EQ(
      kubectl("get rolloutpool pool -o jsonpath='{.status.conditions[?(@.type==\"Available\")]"
              ".status}'")
          .output,
      "True");

  // Scale down to one through the scale subresource: the surplus replicas are drained first.
  ASSERT_EQ(kubectl("scale rolloutpool pool --replicas=1").exit_code, 0);
  ASSERT_TRUE(
      WaitUntil([&] { return pool_pods()["items"].size() == 1u; }, std::chrono::seconds(60)))
      << kubectl("get pods").output << log_of("operator");
  CommandResult events = kubectl("get events --field-selector involvedObject.name=pool");
  EXPECT_NE(events.output.find("DrainingReplica"), std::string::npos) << events.output;
  ASSERT_TRUE(WaitUntil(
      [&] { return get("rolloutpool pool").value("/status/replicas"_json_pointer, 0) == 1; }));

  // Deleting the pool drains its last replica, then the finalizer lets it go.
  ASSERT_EQ(kubectl("delete rolloutpool pool --wait=true --timeout=90s").exit_code, 0)
      << log_of("operator");
  EXPECT_TRUE(WaitUntil([&] { return pool_pods()["items"].empty(); }, std::chrono::seconds(60)));

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace operator_rolloutpool_test
}  // namespace sluice::e2e
