// End-to-end: the operator on the local cluster. `sluice up` starts apiserver, node agent and
// sluice-operator; a Dataflow applied with kubectl becomes a running sluice-dataflow pod behind a
// Service, its status fills from the worker, and deleting it removes the owned children while
// the write-ahead-log claim stays.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/node_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kDataflow[] = R"(apiVersion: sluice.dev/v1alpha1
kind: Dataflow
metadata:
  name: arith
spec:
  dataset:
    builtin: {generator: arithmetic, count: 500}
  workflow:
    type: single-turn
    roles: [{name: policy, policy: tiny}]
  reward: {type: exact-match}
  storage: {size: 1Gi}
)";

TEST(OperatorDataflowTest, DataflowBecomesARunningPodWithLiveStatus) {
  if (!HaveKubectl()) GTEST_SKIP() << "kubectl is not installed";
  char tmpl[] = "/tmp/sluice-operator-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string state = dir + "/state";
  std::ofstream(dir + "/cluster.yaml") << kTestClusterConfig;
  const std::string sluice = BinDir() + "/sluice";
  const int operator_port = NodeProcess::FreePort();
  CommandResult up = RunShell(sluice + " up --config " + dir + "/cluster.yaml --state-dir " +
                              state + " --bin-dir " + BinDir() + " --apiserver-port " +
                              std::to_string(NodeProcess::FreePort()) + " --node-port " +
                              std::to_string(NodeProcess::FreePort()) + " --operator-port " +
                              std::to_string(operator_port));
  ASSERT_EQ(up.exit_code, 0) << up.output;
  auto kubectl = [&](const std::string& args) {
    return RunShell("/usr/bin/kubectl --kubeconfig " + state + "/kubeconfig " + args);
  };
  auto get = [&](const std::string& what) {
    CommandResult r = kubectl("get " + what + " -o json");
    return r.exit_code == 0 ? json::parse(r.output, nullptr, false) : json();
  };
  auto operator_log = [&] {
    std::ifstream in(state + "/logs/operator.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  std::ofstream(dir + "/dataflow.yaml") << kDataflow;
  ASSERT_EQ(kubectl("apply -f " + dir + "/dataflow.yaml").exit_code, 0);

  // The pod runs and becomes ready; the Dataflow reports Ready with the worker's counters.
  ASSERT_TRUE(WaitUntil(
      [&] {
        json df = get("dataflow arith");
        return df.is_object() && df.value("/status/promptsTotal"_json_pointer, 0) > 0;
      },
      std::chrono::seconds(60)))
      << kubectl("get dataflow arith -o yaml").output
      << kubectl("describe pod arith-dataflow").output << operator_log();
  json df = get("dataflow arith");
  EXPECT_EQ(df.value("/status/promptsTotal"_json_pointer, 0), 500);
  EXPECT_EQ(df.value("/status/endpoint"_json_pointer, ""), "http://arith.default.svc:8080");
  EXPECT_EQ(
      kubectl("get dataflow arith -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'")
          .output,
      "True");
  json pod = get("pod arith-dataflow");
  EXPECT_EQ(pod.value("/metadata/labels/app.kubernetes.io~1managed-by"_json_pointer, ""),
            "sluice-operator");
  EXPECT_EQ(pod.value("/metadata/ownerReferences/0/kind"_json_pointer, ""), "Dataflow");
  EXPECT_EQ(kubectl("get svc arith").exit_code, 0);
  EXPECT_EQ(kubectl("get pvc arith-wal").exit_code, 0);
  EXPECT_EQ(kubectl("get secret arith-token -o jsonpath={.data.token}").output.size(), 88u);

  // The operator's metrics carry controller-runtime's names.
  {
    http::ClientOptions options;
    options.base_url = "http://127.0.0.1:" + std::to_string(operator_port);
    auto client = http::Client::Create(options);
    ASSERT_TRUE(client.ok());
    auto metrics = (*client)->Get("/metrics");
    ASSERT_TRUE(metrics.ok());
    EXPECT_NE(metrics->body.find("controller_runtime_reconcile_total{controller=\"dataflow\""),
              std::string::npos)
        << metrics->body.substr(0, 2000);
  }

  // Deleting the Dataflow removes what it owns; the log's claim stays for the user to delete.
  ASSERT_EQ(kubectl("delete dataflow arith --wait=true --timeout=60s").exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return kubectl("get pod arith-dataflow").exit_code != 0; },
                        std::chrono::seconds(60)));
  EXPECT_TRUE(WaitUntil([&] { return kubectl("get svc arith").exit_code != 0; }));
  EXPECT_EQ(kubectl("get pvc arith-wal").exit_code, 0);

  CommandResult down = RunShell(sluice + " down --state-dir " + state);
  EXPECT_EQ(down.exit_code, 0) << down.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::e2e
