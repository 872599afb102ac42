// End-to-end: the TrainerJob and Policy controllers on the local cluster, with sluice-testpod
// standing in for the trainer ranks (operator --trainer-image sluice/testpod:dev, trainer mode).
// A two-rank gang starts together with MASTER_ADDR/RANK/WORLD_SIZE, restarts as a whole when
// one rank fails, finishes when rank 0 completes its steps, and the Policy reports the version
// the job published; a suspended job runs no pods.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kManifest[] = R"(apiVersion: sluice.dev/v1alpha1
kind: TrainerJob
metadata:
  name: train
spec:
  policyRef: {name: tiny}
  dataflowRef: {name: arith}
  algorithm: {type: grpo}
  optimizer: {lr: 0.001}
  steps: 30
  replicas: 2
  runPolicy: {backoffLimit: 2}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env:
      - {name: SLUICE_TESTPOD_MODE, value: trainer}
      - {name: SLUICE_TESTPOD_FAIL_RANK, value: "1"}
      - {name: SLUICE_TESTPOD_FAIL_ATTEMPT, value: "0"}
---
apiVersion: sluice.dev/v1alpha1
kind: TrainerJob
metadata:
  name: parked
spec:
  policyRef: {name: tiny}
  dataflowRef: {name: arith}
  algorithm: {type: grpo}
  optimizer: {lr: 0.001}
  steps: 5
  replicas: 1
  runPolicy: {suspend: true}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env: [{name: SLUICE_TESTPOD_MODE, value: trainer}]
)";

TEST(OperatorTrainerJobTest, GangRunsRestartsOnRankFailureCompletesAndPublishes) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  // The operator inherits these from `sluice up`: its --trainer-image and --status-period (so it
  // reads rank 0's progress while the short stand-in job runs).
  ASSERT_TRUE(cluster.Up(
      "SLUICE_OPERATOR_TRAINER_IMAGE=sluice/testpod:dev SLUICE_OPERATOR_STATUS_PERIOD=300ms"))
      << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto get = [&](const std::string& what) { return cluster.Get(what); };
  auto operator_log = [&] { return cluster.Log("operator"); };
  ASSERT_EQ(
      cluster.Apply(kTestPolicyManifest + std::string(kManifest) + "---\n" + kTestDataflowManifest),
      0);

  // Both ranks start with the gang's environment.
  ASSERT_TRUE(WaitUntil(
      [&] { return kubectl("logs train-1").output.find("rank 1 of 2") != std::string::npos; },
      std::chrono::seconds(60)))
      << kubectl("get pods -o wide").output << operator_log();
  // The gang's own NetworkPolicy, owned by the job: only its ranks reach the rendezvous store
  // and Gloo (operator/controllers/network_policies.h).
  ASSERT_TRUE(WaitUntil([&] {
    return kubectl("get networkpolicy train-gang-ingress").exit_code == 0;
  })) << kubectl("get networkpolicies").output
      << operator_log();
  const json gang = get("networkpolicy train-gang-ingress");
  EXPECT_EQ(gang.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "TrainerJob");
  EXPECT_EQ(gang.value("/spec/podSelector/matchLabels/sluice.dev~1trainer-job"_json_pointer, ""),
            "train");
  EXPECT_EQ(gang.value("/spec/ingress/0/from/0/podSelector"_json_pointer, json()),
            gang.value("/spec/podSelector"_json_pointer, json()));
  EXPECT_FALSE(gang.contains("/spec/ingress/0/ports"_json_pointer)) << gang.dump();
  EXPECT_EQ(kubectl("get pods -l sluice.dev/trainer-job=train,app.kubernetes.io/component=trainer "
                    "-o name")
                .output.find("pod/train-"),
            0u);
  // The Dataflow's switch removes it too, while the job runs on.
  ASSERT_EQ(kubectl("patch dataflow arith --type=merge -p "
                    "'{\"spec\":{\"networkPolicy\":{\"enabled\":false}}}'")
                .exit_code,
            0);
  EXPECT_TRUE(WaitUntil([&] {
    return kubectl("get networkpolicy train-gang-ingress").exit_code != 0;
  })) << kubectl("get networkpolicies").output
      << operator_log();

  // Rank 1 may fail before rank 0 logs, and the gang restart replaces train-0: the master line
  // shows in whichever attempt's rank 0 is read.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return kubectl("logs train-0").output.find("master train-0.train.default.svc:29500") !=
               std::string::npos;
      },
      std::chrono::seconds(60)))
      << kubectl("logs train-0").output;

  // Rank 1 fails in attempt 0: the whole gang restarts once, then the job completes.
  ASSERT_TRUE(WaitUntil(
      [&] {
        json job = get("trainerjob train");
        return job.is_object() && job.value("/status/phase"_json_pointer, "") == "Succeeded";
      },
      std::chrono::seconds(120)))
      << kubectl("get trainerjob train -o yaml").output << kubectl("get pods").output
      << operator_log();
  json job = get("trainerjob train");
  EXPECT_EQ(job.value("/status/restarts"_json_pointer, 0), 1);
  // The version came from rank 0's GET /v1/status, over HTTPS with the ranks' certificate from the
  // namespace's CA, which the operator verified under rank 0's stable name.
  const json serving = get("secret train-trainer-tls");
  EXPECT_EQ(serving.value("type", ""), "kubernetes.io/tls") << serving.dump();
  EXPECT_EQ(serving.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "TrainerJob");
  EXPECT_EQ(job.value("/status/step"_json_pointer, 0), 30);
  EXPECT_GT(job.value("/status/version"_json_pointer, 0), 0);
  EXPECT_EQ(kubectl("get trainerjob train -o jsonpath='{.status.conditions[?(@.type==\"Complete\")]"
                    ".status}'")
                .output,
            "True");
  CommandResult events = kubectl("get events --field-selector involvedObject.name=train");
  EXPECT_NE(events.output.find("GangRestarted"), std::string::npos) << events.output;
  EXPECT_TRUE(
      WaitUntil([&] { return get("pods -l sluice.dev/trainer-job=train")["items"].empty(); }));

  // The Policy reports what the job published.
  ASSERT_TRUE(WaitUntil([&] {
    return get("policy tiny").value("/status/version"_json_pointer, 0) > 0;
  })) << kubectl("get policy tiny -o yaml").output;
  EXPECT_NE(get("policy tiny")
                .value("/status/weightsURL"_json_pointer, "")
                .find("https://train-0.train.default.svc:8080/v1/weights/"),
            std::string::npos);

  // The suspended job runs nothing.
  ASSERT_TRUE(WaitUntil([&] {
    return get("trainerjob parked").value("/status/phase"_json_pointer, "") == "Suspended";
  }));
  EXPECT_TRUE(get("pods -l sluice.dev/trainer-job=parked")["items"].empty());

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
