// End-to-end: the operator installed with the Helm chart, as a user installs it on a cluster
// (docs/operations.md), with the real helm, trains an experiment on the local cluster:
//   - `sluice up --no-operator`, and the Sluice CRDs deleted, so that helm installs them from the
//     chart's crds/;
//   - `helm install` into a namespace that enforces the restricted Pod Security profile: the
//     operator runs as the pod of the chart's Deployment, with the chart's ServiceAccount (its
//     in-cluster configuration) and RBAC, and RBAC refuses it nothing;
//   - examples/arithmetic-grpo.yaml, shortened and applied with kubectl, trains to Succeeded, its
//     workers created by that operator;
//   - `helm upgrade` with another operator image tag rolls the Deployment to a ready pod of the
//     new image and none of the old;
//   - `helm uninstall` removes the operator's objects and leaves the CRDs and the user's objects.
// Helm 4 applies objects server-side by default; the local cluster does not serve server-side
// apply, so helm runs with --server-side=false here (docs/local-cluster.md).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/main_job/example_manifest.h"
#include "tests/e2e/sluice_session.h"
#include "tests/helm/helm_chart.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kRelease[] = "rl";
constexpr char kNamespace[] = "sluice-helm";
constexpr char kOperator[] = "rl-sluice-operator";  // Its Deployment, ServiceAccount, ClusterRole.
constexpr char kOperatorUser[] = "system:serviceaccount:sluice-helm:rl-sluice-operator";
constexpr char kTrainerJob[] = "arithmetic-grpo";
constexpr const char* kCrds[] = {"policies.sluice.dev", "dataflows.sluice.dev",
                                 "rolloutpools.sluice.dev", "trainerjobs.sluice.dev"};

// The API server's access-log lines of `user`'s requests, and of those refused with 403.
struct AccessLog {
  int64_t requests = 0;
  std::string refused;
};
AccessLog RequestsOf(const SluiceSession& cluster, const std::string& user) {
  AccessLog out;
  std::ifstream in(cluster.state() + "/logs/apiserver.log");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"user\":\"" + user + "\"") == std::string::npos) continue;
    ++out.requests;
    if (line.find("\"status\":403") != std::string::npos) out.refused += line + "\n";
  }
  return out;
}

// The images of the operator's pods that are Ready, and of all of them.
struct OperatorPods {
  std::vector<std::string> ready, all;
};
OperatorPods OperatorPodImages(const SluiceSession& cluster) {
  OperatorPods out;
  const json pods = cluster.Get(std::string("pods -n ") + kNamespace +
                                " -l app.kubernetes.io/component=operator");
  if (!pods.is_object()) return out;
  for (const json& pod : pods.value("items", json::array())) {
    const std::string image = pod.value("/spec/containers/0/image"_json_pointer, "");
    out.all.push_back(image);
    for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Ready" && c.value("status", "") == "True") {
        out.ready.push_back(image);
      }
    }
  }
  return out;
}

TEST(HelmInstallTest, TheChartsOperatorTrainsAnExampleAndUpgradeAndUninstallKeepUsersObjects) {
  ASSERT_TRUE(helm_test::HaveHelm()) << helm_test::kHelmMissing;
  // A short run: a 5-step warm start, 15 RL steps, evaluations of 40 rows.
  std::string manifest;
  ASSERT_TRUE(EditedExample(kTrainerJob,
                            {{"\n      count: 20000\n", "\n      count: 2000\n"},
                             {"\n    everyVersions: 50\n", "\n    everyVersions: 10\n"},
                             {"\n    samples: 400\n", "\n    samples: 40\n"},
                             {"\n    steps: 100\n", "\n    steps: 5\n"},
                             {"\n  steps: 600\n", "\n  steps: 15\n"}},
                            &manifest));

  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("", "--no-operator")) << cluster.up().output;
  std::string crds;
  for (const char* crd : kCrds) crds += std::string(" ") + crd;
  CommandResult deleted = cluster.Kubectl("delete crd" + crds);
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  ASSERT_TRUE(WaitUntil([&] { return cluster.Kubectl("get crd" + crds).exit_code != 0; }));
  CommandResult created = cluster.Kubectl(std::string("create namespace ") + kNamespace);
  ASSERT_EQ(created.exit_code, 0) << created.output;
  CommandResult labelled = cluster.Kubectl(std::string("label namespace ") + kNamespace +
                                           " pod-security.kubernetes.io/enforce=restricted");
  ASSERT_EQ(labelled.exit_code, 0) << labelled.output;

  helm_test::HelmScratch helm;
  const std::string chart = helm_test::ShellQuote(helm_test::ChartDir().string());
  const std::string common = std::string(" --namespace ") + kNamespace +
                             " --server-side=false --kubeconfig " +
                             helm_test::ShellQuote(cluster.state() + "/kubeconfig");
  const auto rolled_out = [&] {
    return cluster.Kubectl(std::string("-n ") + kNamespace + " rollout status deployment/" +
                           kOperator + " --timeout=120s");
  };

  // Install. The pod's listeners on its own IP: the local cluster's pods share the host network.
  helm_test::HelmResult installed =
      helm.Run(std::string("install ") + kRelease + " " + chart + common +
               " --set 'operator.bindAddress=$(POD_IP)' --set operator.statusPeriod=1s");
  ASSERT_EQ(installed.exit_code, 0) << installed.err << installed.out;
  EXPECT_EQ(cluster.Kubectl("get crd" + crds).exit_code, 0) << "the chart's crds/ are installed";
  CommandResult rolled = rolled_out();
  ASSERT_EQ(rolled.exit_code, 0) << rolled.output
                                 << cluster.Kubectl("-n sluice-helm get pods -o yaml").output;
  const json pod = cluster.Get(std::string("pods -n ") + kNamespace +
                               " -l app.kubernetes.io/component=operator");
  ASSERT_TRUE(pod.is_object());
  ASSERT_EQ(pod["items"].size(), 1u) << pod.dump(2);
  EXPECT_EQ(pod["items"][0].value("/spec/serviceAccountName"_json_pointer, ""), kOperator);
  EXPECT_EQ(pod["items"][0].value("/spec/containers/0/image"_json_pointer, ""),
            "sluice/operator:0.1.0");

  // Train through it.
  ASSERT_EQ(cluster.Apply(manifest), 0);
  std::string phase;
  EXPECT_TRUE(WaitUntil(
      [&] {
        phase = cluster.JsonPath(std::string("trainerjob ") + kTrainerJob, "{.status.phase}");
        return phase == "Succeeded" || phase == "Failed";
      },
      std::chrono::minutes(5)));
  ASSERT_EQ(phase, "Succeeded")
      << cluster.Kubectl(std::string("get trainerjob ") + kTrainerJob + " -o yaml").output
      << cluster.Kubectl("get pods -A -o wide").output
      << cluster
             .Kubectl(std::string("-n ") + kNamespace + " logs deployment/" + kOperator +
                      " --tail=40")
             .output;
  EXPECT_EQ(cluster.JsonPath(std::string("trainerjob ") + kTrainerJob, "{.status.step}"), "15");
  // The operator did it as its ServiceAccount, and RBAC refused it nothing.
  const AccessLog calls = RequestsOf(cluster, kOperatorUser);
  EXPECT_GT(calls.requests, 0);
  EXPECT_EQ(calls.refused, "") << "RBAC refused the chart's operator (helm/sluice/templates/"
                                  "rbac.yaml comes from api/operator_rbac.cpp)";

  // Upgrade: a new image tag rolls the operator.
  helm_test::HelmResult upgraded =
      helm.Run(std::string("upgrade ") + kRelease + " " + chart + common +
               " --reuse-values --set images.operator.tag=0.1.1");
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.err << upgraded.out;
  rolled = rolled_out();
  EXPECT_EQ(rolled.exit_code, 0) << rolled.output;
  OperatorPods pods;
  EXPECT_TRUE(WaitUntil(
      [&] {
        pods = OperatorPodImages(cluster);
        return pods.all == std::vector<std::string>{"sluice/operator:0.1.1"} &&
               pods.ready == pods.all;
      },
      std::chrono::seconds(60)))
      << cluster.Kubectl(std::string("-n ") + kNamespace + " get pods -o wide").output;

  // Uninstall: the release's objects go; the CRDs and the user's objects stay.
  helm_test::HelmResult removed =
      helm.Run(std::string("uninstall ") + kRelease + " --namespace " + kNamespace +
               " --kubeconfig " + helm_test::ShellQuote(cluster.state() + "/kubeconfig"));
  ASSERT_EQ(removed.exit_code, 0) << removed.err << removed.out;
  EXPECT_TRUE(
      WaitUntil([&] { return OperatorPodImages(cluster).all.empty(); }, std::chrono::seconds(60)));
  EXPECT_NE(
      cluster.Kubectl(std::string("-n ") + kNamespace + " get deployment " + kOperator).exit_code,
      0);
  EXPECT_NE(cluster.Kubectl(std::string("get clusterrole ") + kOperator).exit_code, 0);
  EXPECT_NE(cluster.Kubectl(std::string("-n ") + kNamespace + " get serviceaccount " + kOperator)
                .exit_code,
            0);
  EXPECT_EQ(cluster.Kubectl("get crd" + crds).exit_code, 0);
  EXPECT_EQ(cluster.JsonPath(std::string("trainerjob ") + kTrainerJob, "{.status.phase}"),
            "Succeeded");
  EXPECT_EQ(cluster.Kubectl("get policy calc").exit_code, 0);
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
