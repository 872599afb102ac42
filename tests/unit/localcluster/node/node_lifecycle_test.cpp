// The node agent's time under a FakeClock, against an in-process API server: a node that stops
// heartbeating goes Ready=Unknown with the unreachable taints only once the clock passes
// node_monitor_grace, and its pods are marked Failed (NodeLost) only once it passes
// pod_eviction_timeout more; a recovered node is Ready again and untainted. A crashing
// container is restarted only when the clock passes its back-off (10 s, then 20 s). Real time
// only spaces the agent's passes (20 ms), so the grace, eviction and back-off take milliseconds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/json/fields.h"
#include "localcluster/node/node_agent.h"
#include "tests/support/in_process_api_server.h"
#include "tests/support/wait_until.h"

namespace sluice::node {
namespace node_lifecycle_test {

using nlohmann::json;

const kube::GroupVersionResource kNodes{"", "v1", "nodes", false};
const kube::GroupVersionResource kPods{"", "v1", "pods", true};

bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  return ::sluice::test_support::WaitUntil(done, limit);
}

class NodeLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The agent's stamps are compared with the API server's: start the fake clock at real time.
    clock_.Advance(std::chrono::system_clock::now() - clock_.WallNow());
    Result<std::unique_ptr<test_support::InProcessApiServer>> server =
        test_support::InProcessApiServer::Create();
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-node-lifecycle-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "bin");
    {  // Image sluice/crasher: a container that exits 1 at once.
      std::ofstream(dir_ / "bin" / "sluice-crasher") << "#!/bin/sh\nexit 1\n";
      std::filesystem::permissions(dir_ / "bin" / "sluice-crasher",
                                   std::filesystem::perms::owner_all);
    }
    NodeAgentOptions options;
    for (const char* name : {"node-a", "node-b"}) {
      NodeSpec node;
      node.name = name;
      options.cluster.nodes.push_back(node);
    }
    options.state_dir = dir_ / "state";
    options.bin_dir = dir_ / "bin";
    options.endpoint = {"127.0.0.1", 1};
    options.pod_ip_prefix = "127.3";
    options.heartbeat_interval = std::chrono::milliseconds(20);
    options.node_monitor_grace = std::chrono::seconds(40);
    options.pod_eviction_timeout = std::chrono::seconds(30);
    options.sync_period = std::chrono::milliseconds(20);
    options.shutdown_grace = std::chrono::milliseconds(200);
    options.backoff_base = std::chrono::seconds(10);
    options.backoff_max = std::chrono::seconds(300);
    options.clock = &clock_;
    agent_ = std::make_unique<NodeAgent>(server_->rest(), std::move(options));
    ASSERT_TRUE(agent_->Start().ok());
    ASSERT_TRUE(WaitFor([&] { return agent_->Ready(); }));
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    agent_.reset();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  json Get(const kube::GroupVersionResource& gvr, const std::string& name) {
    Result<json> r = server_->dynamic().Resource(gvr, gvr.namespaced ? "default" : "").Get(name);
    return r.ok() ? *r : json();
  }

  std::string Ready(const std::string& node) {
    const json object = Get(kNodes, node);  // ArrayAt refers into it.
    for (const json& c : ArrayAt(object, "/status/conditions")) {
      if (StringField(c, "type") == "Ready") return StringField(c, "status");
    }
    return "";
  }

  bool Tainted(const std::string& node) {
    const json object = Get(kNodes, node);
    for (const json& t : ArrayAt(object, "/spec/taints")) {
      if (StringField(t, "key") == "node.kubernetes.io/unreachable") return true;
    }
    return false;
  }

  void Annotate(const std::string& node, const json& value) {
    const json patch = {{"metadata", {{"annotations", {{"sluice.dev/simulated-failure", value}}}}}};
    ASSERT_TRUE(server_->dynamic()
                    .Resource(kNodes, "")
                    .Patch(node, kube::PatchType::kMerge, patch.dump())
                    .ok());
  }

  FakeClock clock_;
  std::unique_ptr<test_support::InProcessApiServer> server_;
  std::filesystem::path dir_;
  std::unique_ptr<NodeAgent> agent_;
};

TEST_F(NodeLifecycleTest, ASilentNodeIsLostAfterTheGraceAndItsPodsAfterTheEvictionTimeout) {
  ASSERT_TRUE(WaitFor([&] { return Ready("node-a") == "True" && Ready("node-b") == "True"; }))
      << Get(kNodes, "node-a").dump();
  // A pod bound to node-b; its image exists nowhere, so it never runs (and never ends).
  const json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "on-b", "namespace": "default"},
      "spec": {"nodeName": "node-b", "restartPolicy": "Never",
               "containers": [{"name": "c", "image": "nowhere/none:1"}]}})");
  ASSERT_TRUE(server_->dynamic().Resource(kPods, "default").Create(pod).ok());

  Annotate("node-b", "true");  // node-b stops heartbeating.
  // Real time passes, the fake clock does not: many heartbeat rounds skip node-b, but it is
  // not lost before the grace.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(Ready("node-b"), "True");
  EXPECT_FALSE(Tainted("node-b"));

  clock_.Advance(std::chrono::seconds(41));
  ASSERT_TRUE(WaitFor([&] { return Ready("node-b") == "Unknown" && Tainted("node-b"); }))
      << Get(kNodes, "node-b").dump();
  EXPECT_EQ(Ready("node-a"), "True");  // It kept heartbeating at the clock's time.
  EXPECT_FALSE(Tainted("node-a"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_NE(StringAt(Get(kPods, "on-b"), "/status/phase"), "Failed");  // Eviction: 30 s more.

  clock_.Advance(std::chrono::seconds(31));
  ASSERT_TRUE(WaitFor([&] {
    const json p = Get(kPods, "on-b");
    return StringAt(p, "/status/phase") == "Failed" && StringAt(p, "/status/reason") == "NodeLost";
  })) << Get(kPods, "on-b").dump();

  Annotate("node-b", nullptr);  // Recovered: it heartbeats again.
  ASSERT_TRUE(WaitFor([&] { return Ready("node-b") == "True" && !Tainted("node-b"); }))
      << Get(kNodes, "node-b").dump();
}

TEST_F(NodeLifecycleTest, ACrashingContainerIsRestartedWhenTheClockPassesItsBackOff) {
  const json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "crasher", "namespace": "default"},
      "spec": {"nodeName": "node-a", "restartPolicy": "Always",
               "containers": [{"name": "c", "image": "sluice/crasher:1"}]}})");
  ASSERT_TRUE(server_->dynamic().Resource(kPods, "default").Create(pod).ok());
  const auto container = [&] {
    const json p = Get(kPods, "crasher");
    const json* c = ValueAt(p, "/status/containerStatuses/0");
    return c != nullptr ? *c : json::object();
  };
  const auto restarts = [&] { return IntField(container(), "restartCount", -1); };
  const auto backing_off = [&] {
    return StringAt(container(), "/state/waiting/reason") == "CrashLoopBackOff";
  };

  // It ran once, exited 1, and waits: the clock stands still, so no restart.
  ASSERT_TRUE(WaitFor([&] { return restarts() == 0 && backing_off(); })) << container().dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(restarts(), 0);

  clock_.Advance(std::chrono::seconds(10));  // The first back-off.
  ASSERT_TRUE(WaitFor([&] { return restarts() == 1 && backing_off(); })) << container().dump();
  clock_.Advance(std::chrono::seconds(10));  // Half of the second (20 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(restarts(), 1);
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(WaitFor([&] { return restarts() == 2; })) << container().dump();
}

}  // namespace node_lifecycle_test
}  // namespace sluice::node
