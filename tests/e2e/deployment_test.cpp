// End-to-end: Deployments and ReplicaSets on a cluster from `sluice up`, driven by the real
// kubectl: `kubectl create deployment` (protobuf), `kubectl rollout status` through a rolling
// update after `kubectl set image`, `kubectl scale`, `kubectl rollout undo`, kube's table
// columns, a replaced pod, and deletion removing the ReplicaSets and pods. The containers are
// sluice/testpod sleeping.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

// The pods of deployment "web" that are not being deleted.
int LivePods(const SluiceSession& session) {
  const json pods = session.Get("pods -l app=web");
  int n = 0;
  for (const json& p : pods.value("items", json::array())) {
    if (!p.contains("/metadata/deletionTimestamp"_json_pointer)) ++n;
  }
  return n;
}

TEST(DeploymentE2eTest, RollingUpdatesScaleAndUndoThroughKubectl) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession session;
  ASSERT_TRUE(session.Up()) << session.up().output;
  auto kubectl = [&](const std::string& args) { return session.Kubectl(args); };
  auto diagnose = [&] {
    return kubectl("get deploy,rs,pods -o wide").output + kubectl("get events").output +
           session.Log("node");
  };

  CommandResult created = kubectl(
      "create deployment web --image=sluice/testpod:dev --replicas=3 -- sluice-testpod sleep");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  // Defaulted as kube does.
  EXPECT_EQ(session.JsonPath("deployment web", "{.spec.strategy.type}"), "RollingUpdate");
  EXPECT_EQ(session.JsonPath("deployment web", "{.spec.strategy.rollingUpdate.maxSurge}"), "25%");
  EXPECT_EQ(session.JsonPath("deployment web", "{.spec.revisionHistoryLimit}"), "10");
  CommandResult rolled = kubectl("rollout status deployment/web --timeout=90s");
  ASSERT_EQ(rolled.exit_code, 0) << rolled.output << diagnose();
  EXPECT_NE(rolled.output.find("deployment \"web\" successfully rolled out"), std::string::npos)
      << rolled.output;
  const std::string first_rs = session.JsonPath("rs -l app=web", "{.items[0].metadata.name}");
  EXPECT_EQ(first_rs.rfind("web-", 0), 0u) << first_rs;
  CommandResult table = kubectl("get deployment web");
  EXPECT_NE(table.output.find("READY   UP-TO-DATE   AVAILABLE"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("3/3"), std::string::npos) << table.output;

  // A new template rolls out as a new ReplicaSet; the old one is scaled to 0 and kept.
  CommandResult set = kubectl("set image deployment/web testpod=sluice/testpod:dev2");
  ASSERT_EQ(set.exit_code, 0) << set.output << kubectl("get deployment web -o yaml").output;
  rolled = kubectl("rollout status deployment/web --timeout=120s");
  ASSERT_EQ(rolled.exit_code, 0) << rolled.output << diagnose();
  EXPECT_EQ(session.JsonPath("rs " + first_rs, "{.spec.replicas}"), "0");
  EXPECT_EQ(session.JsonPath("deployment web",
                             "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}"),
            "2");
  EXPECT_EQ(LivePods(session), 3) << diagnose();
  const json events = session.Get("events --field-selector involvedObject.name=web");
  bool scaled = false;
  for (const json& e : events.value("items", json::array())) {
    scaled = scaled || e.value("reason", "") == "ScalingReplicaSet";
  }
  EXPECT_TRUE(scaled) << events.dump();

  // kubectl scale, then a deleted pod is replaced.
  ASSERT_EQ(kubectl("scale deployment web --replicas=2").exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return LivePods(session) == 2; }, std::chrono::seconds(60)))
      << diagnose();
  const std::string victim = session.JsonPath("pods -l app=web", "{.items[0].metadata.name}");
  ASSERT_EQ(kubectl("delete pod " + victim + " --wait=false").exit_code, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return session.JsonPath("deployment web", "{.status.availableReplicas}") == "2" &&
               kubectl("get pod " + victim).exit_code != 0;
      },
      std::chrono::seconds(60)))
      << diagnose();

  // Undo goes back to the first template, reusing its ReplicaSet.
  ASSERT_EQ(kubectl("rollout undo deployment/web").exit_code, 0);
  rolled = kubectl("rollout status deployment/web --timeout=120s");
  ASSERT_EQ(rolled.exit_code, 0) << rolled.output << diagnose();
  EXPECT_EQ(session.JsonPath("rs " + first_rs, "{.spec.replicas}"), "2");
  EXPECT_EQ(session.JsonPath("deployment web", "{.spec.template.spec.containers[0].image}"),
            "sluice/testpod:dev");

  // Deleting the Deployment deletes its ReplicaSets and their pods.
  ASSERT_EQ(kubectl("delete deployment web").exit_code, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return session.JsonPath("rs -l app=web", "{.items[*].metadata.name}").empty() &&
               LivePods(session) == 0;
      },
      std::chrono::seconds(60)))
      << diagnose();
  EXPECT_EQ(session.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
