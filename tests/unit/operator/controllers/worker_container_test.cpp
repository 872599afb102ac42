// WorkerContainer: the worker contract's port and probes, the caller's fields as given.
#include "operator/controllers/worker_container.h"

#include <gtest/gtest.h>

namespace sluice::controllers {
namespace worker_container_test {

using nlohmann::json;

TEST(WorkerContainerTest, ServesHttpFirstAndProbesReadyzAndHealthzThere) {
  WorkerContainerSpec spec;
  spec.name = "trainer";
  spec.image = "sluice/trainer:0.1.0";
  spec.pull_policy = "IfNotPresent";
  spec.args = json::array({"--rank=0"});
  spec.env = json::array({{{"name", "TMPDIR"}, {"value", "/tmp"}}});
  spec.http_port = 8080;
  spec.extra_ports = json::array({{{"name", "rendezvous"}, {"containerPort", 29500}}});
  spec.resources = {{"requests", {{"cpu", "2"}}}};
  spec.mounts = json::array({{{"name", "tmp"}, {"mountPath", "/tmp"}}});
  const json c = WorkerContainer(spec);
  EXPECT_EQ(c["name"], "trainer");
  EXPECT_EQ(c["image"], "sluice/trainer:0.1.0");
  EXPECT_EQ(c["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(c["args"], spec.args);
  EXPECT_EQ(c["env"], spec.env);
  EXPECT_EQ(c["resources"], spec.resources);
  EXPECT_EQ(c["volumeMounts"], spec.mounts);
  ASSERT_EQ(c["ports"].size(), 2u);
  EXPECT_EQ(c["ports"][0], json({{"name", "http"}, {"containerPort", 8080}, {"protocol", "TCP"}}));
  EXPECT_EQ(c["ports"][1]["name"], "rendezvous");
  EXPECT_EQ(c["readinessProbe"]["httpGet"], json({{"path", "/readyz"}, {"port", "http"}}));
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 2);
  EXPECT_EQ(c["readinessProbe"]["failureThreshold"], 3);
  EXPECT_EQ(c["livenessProbe"]["httpGet"], json({{"path", "/healthz"}, {"port", "http"}}));
  // A minute of failed liveness checks before a restart: a long model load is not a hang.
  EXPECT_EQ(c["livenessProbe"]["periodSeconds"].get<int>() *
                c["livenessProbe"]["failureThreshold"].get<int>(),
            60);
}

}  // namespace worker_container_test
}  // namespace sluice::controllers
