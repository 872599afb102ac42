// End-to-end: RolloutPool placement on the local cluster (issue 7), with sluice-testpod standing
// in for the rollout worker (worker mode). Three scenarios:
//   - spill-over: a Priority pool wants more GPU replicas than its first region has GPUs; the
//     replicas left Unschedulable there for spilloverAfterSeconds move to the next region;
//   - node failure: the replicas of a failed node are marked Failed (NodeLost), deleted and
//     re-created on the region's other node, and the pool is whole again;
//   - invalid spec: the API server refuses a pool that breaks a CRD CEL rule, naming the field;
//     with that rule missing from the installed CRD (an older CRD than the operator's), the
//     operator's own validation stops the pool: Available=False/InvalidSpec, a Warning event, no
//     replica pods.
// The test cluster (kTestClusterConfig): region local-eu-west has one GPU (west-gpu) and a CPU
// node, region local-us-east two GPUs (east-gpu) and a CPU node.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

// Region west (one GPU in the cluster) first, then east (two GPUs); each replica needs a GPU.
constexpr char kSpillPool[] = R"(apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: spill
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: builtin, image: "sluice/testpod:dev"}
  template:
    resources: {cpu: 1, memory: 1Gi, gpus: 1}
    env: [{name: SLUICE_TESTPOD_MODE, value: worker}]
  replicas: 3
  drain: {gracePeriodSeconds: 0}
  placement:
    strategy: Priority
    spilloverAfterSeconds: 2
    regions:
      - name: west
        nodeSelector: {topology.kubernetes.io/region: local-eu-west}
        priority: 10
      - name: east
        nodeSelector: {topology.kubernetes.io/region: local-us-east}
        priority: 1
)";

// Two CPU replicas in region east, which has two nodes (east-gpu, east-cpu).
constexpr char kHealPool[] = R"(apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: heal
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: builtin, image: "sluice/testpod:dev"}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env: [{name: SLUICE_TESTPOD_MODE, value: worker}]
  replicas: 2
  drain: {gracePeriodSeconds: 0}
  placement:
    strategy: Spread
    regions:
      - name: east
        nodeSelector: {topology.kubernetes.io/region: local-us-east}
)";

// Passes the structural schema, breaks the placement CEL rule: strategy Priority needs a
// priority on every region, and region east has none.
constexpr char kInvalidPool[] = R"(apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: bad
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: builtin, image: "sluice/testpod:dev"}
  template:
    resources: {cpu: 1, memory: 1Gi}
    env: [{name: SLUICE_TESTPOD_MODE, value: worker}]
  replicas: 1
  placement:
    strategy: Priority
    regions:
      - name: west
        nodeSelector: {topology.kubernetes.io/region: local-eu-west}
        priority: 10
      - name: east
        nodeSelector: {topology.kubernetes.io/region: local-us-east}
)";

// The node agent's fast failure detection (sluice-node flags through `sluice up`'s environment):
// a failed node is Ready=Unknown after 6 s and its pods Failed 1 s later. One heartbeat round
// renews every node's Lease and status in turn and can take seconds on two busy cores; the agent
// counts a node lost only when a completed round skipped it (node_liveness.h), and the grace of
// twelve heartbeats keeps the detection well clear of a slow round.
constexpr char kFastNodeEnv[] =
    "SLUICE_NODE_HEARTBEAT_INTERVAL=500ms SLUICE_NODE_NODE_MONITOR_GRACE_PERIOD=6s "
    "SLUICE_NODE_POD_EVICTION_TIMEOUT=1s SLUICE_OPERATOR_STATUS_PERIOD=500ms";

std::string Seconds(std::chrono::steady_clock::time_point since) {
  return std::to_string(
             std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count()) +
         " s";
}

// The pool's entry in status.regions, or null.
json RegionStatus(const json& pool, const std::string& region) {
  for (const json& r : pool.value("/status/regions"_json_pointer, json::array())) {
    if (r.value("name", "") == region) return r;
  }
  return json();
}

// The events about the object named `object` (a pool or a pod) with this reason.
std::vector<json> EventsWithReason(const SluiceSession& cluster, const std::string& object,
                                   const std::string& reason) {
  std::vector<json> out;
  const json events = cluster.Get("events --field-selector involvedObject.name=" + object);
  for (const json& e : events.value("items", json::array())) {
    if (e.value("reason", "") == reason) out.push_back(e);
  }
  return out;
}

TEST(OperatorPlacementTest, PriorityPoolSpillsUnschedulableReplicasToTheNextRegion) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=500ms")) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto diagnose = [&] {
    return kubectl("get rolloutpool spill -o yaml").output + kubectl("get pods -o wide").output +
           kubectl("get events").output + cluster.Log("operator");
  };
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(cluster.Apply(kTestPolicyManifest + std::string(kTestDataflowManifest) + "---\n" +
                          kSpillPool),
            0);

  // West's one GPU runs one replica; the two it cannot take spill over to east's two GPUs.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pool = cluster.Get("rolloutpool spill");
        return pool.is_object() && pool.value("/status/readyReplicas"_json_pointer, 0) == 3 &&
               RegionStatus(pool, "east").value("ready", 0) == 2;
      },
      std::chrono::seconds(60)))
      << diagnose();
  std::cerr << "spill-over: 3 replicas ready after " << Seconds(start) << "\n";
  // Not before spilloverAfterSeconds (2 s; the controller compares whole seconds, so at least
  // 1 s after the replicas were created).
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  const json pool = cluster.Get("rolloutpool spill");
  const json west = RegionStatus(pool, "west");
  const json east = RegionStatus(pool, "east");
  EXPECT_EQ(west.value("replicas", -1), 1) << pool.dump();
  EXPECT_EQ(west.value("ready", -1), 1) << pool.dump();
  EXPECT_EQ(west.value("pending", -1), 0) << pool.dump();
  EXPECT_EQ(east.value("replicas", -1), 2) << pool.dump();
  EXPECT_EQ(east.value("pending", -1), 0) << pool.dump();
  EXPECT_EQ(cluster.JsonPath("rolloutpool spill",
                             "{.status.conditions[?(@.type==\"RegionDegraded\")].status}"),
            "False")
      << pool.dump();

  // Every replica runs on a GPU node of the region its label names.
  const json pods = cluster.Get("pods -l sluice.dev/pool=spill");
  int running_west = 0, running_east = 0;
  for (const json& p : pods.value("items", json::array())) {
    if (p.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
    const std::string region = p.value("/metadata/labels/sluice.dev~1region"_json_pointer, "");
    const std::string node = p.value("/spec/nodeName"_json_pointer, "");
    ASSERT_EQ(p.value("/status/phase"_json_pointer, ""), "Running") << p.dump();
    if (region == "west") {
      EXPECT_EQ(node, "west-gpu");
      ++running_west;
    } else {
      EXPECT_EQ(region, "east");
      EXPECT_EQ(node, "east-gpu");
      ++running_east;
    }
  }
  EXPECT_EQ(running_west, 1) << pods.dump();
  EXPECT_EQ(running_east, 2) << pods.dump();

  // The operator said why the replicas moved, naming west's replicas.
  const std::vector<json> spilled = EventsWithReason(cluster, "spill", "SpilledOver");
  ASSERT_FALSE(spilled.empty()) << kubectl("get events").output;
  std::set<std::string> named;
  for (const json& e : spilled) {
    const std::string message = e.value("message", "");
    EXPECT_NE(message.find("placing it in the next region"), std::string::npos) << message;
    EXPECT_EQ(message.rfind("Replica spill-west-", 0), 0u) << message;
    named.insert(message.substr(0, message.find(' ', 8)));
    EXPECT_EQ(e.value("type", ""), "Normal");
  }
  EXPECT_EQ(named.size(), 2u) << "expected both surplus west replicas to be reported";
  // The operator did all this as its own ServiceAccount (Down() checks RBAC refused it nothing).
  EXPECT_NE(cluster.Log("apiserver", size_t{1} << 26)
                .find("\"user\":\"system:serviceaccount:sluice-system:sluice-operator\""),
            std::string::npos);
  // They had been refused by the scheduler first.
  for (const std::string& replica : named) {
    const std::string pod = replica.substr(replica.find(' ') + 1);
    EXPECT_FALSE(EventsWithReason(cluster, pod, "FailedScheduling").empty())
        << pod << "\n"
        << kubectl("get events").output;
  }

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

TEST(OperatorPlacementTest, APoolLargerThanTheClusterSettlesWithInsufficientCapacity) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up("SLUICE_OPERATOR_STATUS_PERIOD=500ms")) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto diagnose = [&] {
    return kubectl("get rolloutpool spill -o yaml").output + kubectl("get pods -o wide").output +
           kubectl("get events").output + cluster.Log("operator");
  };
  // Four GPU replicas; the cluster has three GPUs (west one, east two).
  std::string pool_manifest = kSpillPool;
  pool_manifest.replace(pool_manifest.find("replicas: 3"), 11, "replicas: 4");
  ASSERT_EQ(cluster.Apply(kTestPolicyManifest + std::string(kTestDataflowManifest) + "---\n" +
                          pool_manifest),
            0);
  const std::string degraded_reason = "{.status.conditions[?(@.type==\"RegionDegraded\")].reason}";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pool = cluster.Get("rolloutpool spill");
        return pool.is_object() && pool.value("/status/readyReplicas"_json_pointer, 0) == 3 &&
               cluster.JsonPath("rolloutpool spill", degraded_reason) == "InsufficientCapacity";
      },
      std::chrono::seconds(60)))
      << diagnose();

  // Settled: for six spill-over periods no replica is deleted or created.
  auto pod_uids = [&] {
    std::set<std::string> uids;
    const json pods = cluster.Get("pods -l sluice.dev/pool=spill");
    for (const json& p : pods.value("items", json::array())) {
      uids.insert(p.value("/metadata/uid"_json_pointer, ""));
    }
    return uids;
  };
  const std::set<std::string> settled = pod_uids();
  EXPECT_EQ(settled.size(), 4u) << diagnose();
  std::this_thread::sleep_for(std::chrono::seconds(12));
  EXPECT_EQ(pod_uids(), settled) << diagnose();

  const json pool = cluster.Get("rolloutpool spill");
  EXPECT_EQ(RegionStatus(pool, "west").value("ready", -1), 1) << pool.dump();
  EXPECT_EQ(RegionStatus(pool, "east").value("ready", -1), 2) << pool.dump();
  EXPECT_EQ(RegionStatus(pool, "east").value("pending", -1), 1) << pool.dump();
  const std::string message = cluster.JsonPath(
      "rolloutpool spill", "{.status.conditions[?(@.type==\"RegionDegraded\")].message}");
  EXPECT_EQ(
      message.rfind("1 replica waits for a node: no placement region has room (refused: east: ", 0),
      0u)
      << message;
  EXPECT_NE(message.find("; west: "), std::string::npos) << message;
  EXPECT_NE(message.find("Insufficient nvidia.com/gpu"), std::string::npos) << message;
  // Said once, as a Warning.
  const std::vector<json> warned = EventsWithReason(cluster, "spill", "InsufficientCapacity");
  ASSERT_EQ(warned.size(), 1u) << kubectl("get events").output;
  EXPECT_EQ(warned[0].value("type", ""), "Warning");
  EXPECT_EQ(warned[0].value("count", 1), 1);
  // The replicas that left west were deleted for spill-over, not scale-down.
  const std::vector<json> deleted = EventsWithReason(cluster, "spill", "DeletedReplica");
  ASSERT_FALSE(deleted.empty()) << kubectl("get events").output;
  for (const json& e : deleted) {
    const std::string m = e.value("message", "");
    EXPECT_NE(m.find("(spill-over: its region has no room)"), std::string::npos) << m;
  }

  // Scaling down to what fits removes the waiting replica and the pool is whole.
  ASSERT_EQ(kubectl("scale rolloutpool spill --replicas=3").exit_code, 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return cluster.JsonPath("rolloutpool spill", degraded_reason) == "AllReplicasPlaced" &&
               pod_uids().size() == 3;
      },
      std::chrono::seconds(30)))
      << diagnose();

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

TEST(OperatorPlacementTest, ReplicasOfAFailedNodeAreRecreatedOnAnotherNodeOfTheRegion) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up(kFastNodeEnv)) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto diagnose = [&] {
    return kubectl("get rolloutpool heal -o yaml").output + kubectl("get pods -o wide").output +
           kubectl("get nodes").output + kubectl("get events").output + cluster.Log("operator");
  };
  ASSERT_EQ(
      cluster.Apply(kTestPolicyManifest + std::string(kTestDataflowManifest) + "---\n" + kHealPool),
      0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pool = cluster.Get("rolloutpool heal");
        return pool.is_object() && pool.value("/status/readyReplicas"_json_pointer, 0) == 2;
      },
      std::chrono::seconds(120)))
      << diagnose();

  // Fail the node of the first replica, as `sluice node fail` does.
  const std::string failed = cluster.JsonPath("pod heal-east-0", "{.spec.nodeName}");
  ASSERT_TRUE(failed == "east-gpu" || failed == "east-cpu") << failed;
  const std::string other = failed == "east-gpu" ? "east-cpu" : "east-gpu";
  const std::string old_uid = cluster.JsonPath("pod heal-east-0", "{.metadata.uid}");
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kubectl("annotate node " + failed + " sluice.dev/simulated-failure=true").exit_code, 0);

  // Every replica is ready again, none on the failed node and none the old pod.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pool = cluster.Get("rolloutpool heal");
        if (!pool.is_object() || pool.value("/status/readyReplicas"_json_pointer, 0) != 2) {
          return false;
        }
        const json pods = cluster.Get("pods -l sluice.dev/pool=heal");
        if (!pods.is_object() || pods["items"].size() != 2u) return false;
        for (const json& p : pods["items"]) {
          if (p.value("/spec/nodeName"_json_pointer, "") != other ||
              p.value("/metadata/uid"_json_pointer, "") == old_uid ||
              p.value("/status/phase"_json_pointer, "") != "Running") {
            return false;
          }
        }
        return true;
      },
      std::chrono::seconds(120)))
      << diagnose();
  std::cerr << "node failure: pool whole again on " << other << " after " << Seconds(start) << "\n";

  // The pool's status and the events are written by other loops than the pods' (the operator's
  // status period, the event recorders): give them a few seconds to catch up, so that a busy
  // machine does not fail the test on a stale read.
  json pool;
  EXPECT_TRUE(WaitUntil(
      [&] {
        pool = cluster.Get("rolloutpool heal");
        return RegionStatus(pool, "east").value("ready", -1) == 2 &&
               cluster.JsonPath("rolloutpool heal",
                                "{.status.conditions[?(@.type==\"Available\")].status}") == "True";
      },
      std::chrono::seconds(30)))
      << pool.dump() << diagnose();
  // The lost replica was reported before it was replaced; the node lost it.
  auto reported = [&] {
    for (const json& e : EventsWithReason(cluster, "heal", "ReplicaFailed")) {
      if (e.value("type", "") == "Warning" &&
          e.value("message", "").find("heal-east-0 ended (Failed)") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil(reported, std::chrono::seconds(30))) << diagnose();
  EXPECT_TRUE(
      WaitUntil([&] { return !EventsWithReason(cluster, "heal-east-0", "NodeLost").empty(); },
                std::chrono::seconds(30)))
      << diagnose();

  ASSERT_EQ(kubectl("annotate node " + failed + " sluice.dev/simulated-failure-").exit_code, 0);
  EXPECT_EQ(cluster.Down().exit_code, 0);
}

TEST(OperatorPlacementTest, InvalidSpecIsRefusedByTheApiServerAndReportedByTheOperator) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up()) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  ASSERT_EQ(cluster.Apply(kTestPolicyManifest + std::string(kTestDataflowManifest)), 0);

  // The installed CRD carries the CEL rule: the API server refuses the pool, naming the field.
  const std::string file = cluster.dir() + "/invalid-pool.yaml";
  std::ofstream(file) << kInvalidPool;
  CommandResult refused = kubectl("apply -f " + file);
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("spec.placement.regions"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("priority must be set on every region"), std::string::npos)
      << refused.output;
  EXPECT_EQ(kubectl("get rolloutpool bad").exit_code, 1);

  // A cluster whose CRD lacks the rule (installed from an older release) lets it through; the
  // operator validates against its own copy of the CRD and blocks the pool.
  const std::string rules_path =
      "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/placement/"
      "x-kubernetes-validations";
  ASSERT_EQ(cluster.JsonPath("crd rolloutpools.sluice.dev", "{.spec.versions[0].name}"),
            "v1alpha1");
  CommandResult patched =
      kubectl("patch crd rolloutpools.sluice.dev --type=json -p '[{\"op\":\"remove\",\"path\":\"" +
              rules_path + "\"}]'");
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  ASSERT_TRUE(WaitUntil([&] { return kubectl("apply -f " + file).exit_code == 0; },
                        std::chrono::seconds(10)))
      << kubectl("apply -f " + file).output;

  std::string reason, message;
  ASSERT_TRUE(WaitUntil(
      [&] {
        reason = cluster.JsonPath("rolloutpool bad",
                                  "{.status.conditions[?(@.type==\"Available\")].reason}");
        return reason == "InvalidSpec";
      },
      std::chrono::seconds(30)))
      << kubectl("get rolloutpool bad -o yaml").output << cluster.Log("operator");
  const json pool = cluster.Get("rolloutpool bad");
  for (const json& c : pool.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") != "Available") continue;
    EXPECT_EQ(c.value("status", ""), "False");
    message = c.value("message", "");
  }
  EXPECT_NE(message.find("spec.placement.regions"), std::string::npos) << message;
  EXPECT_NE(message.find("priority must be set on every region"), std::string::npos) << message;

  const std::vector<json> warnings = EventsWithReason(cluster, "bad", "InvalidSpec");
  ASSERT_FALSE(warnings.empty()) << kubectl("get events").output;
  EXPECT_EQ(warnings[0].value("type", ""), "Warning");
  EXPECT_NE(warnings[0].value("message", "").find("spec.placement.regions"), std::string::npos)
      << warnings[0].dump();
  CommandResult described = kubectl("describe rolloutpool bad");
  EXPECT_NE(described.output.find("InvalidSpec"), std::string::npos) << described.output;

  // No replica was created, while the Dataflow's own pod shows the operator acts on the rest.
  ASSERT_TRUE(WaitUntil([&] { return kubectl("get pod arith-dataflow").exit_code == 0; }))
      << kubectl("get pods").output;
  EXPECT_TRUE(cluster.Get("pods -l sluice.dev/pool=bad").value("items", json::array()).empty())
      << kubectl("get pods").output;

  // Fixing the spec clears the condition and brings the replica up: the block was the spec.
  CommandResult fixed = kubectl(
      "patch rolloutpool bad --type=json -p "
      "'[{\"op\":\"add\",\"path\":\"/spec/placement/regions/1/priority\",\"value\":1}]'");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.output;
  ASSERT_TRUE(WaitUntil([&] {
    return !cluster.Get("pods -l sluice.dev/pool=bad").value("items", json::array()).empty() &&
           cluster.JsonPath("rolloutpool bad",
                            "{.status.conditions[?(@.type==\"Available\")].reason}") !=
               "InvalidSpec";
  })) << kubectl("get rolloutpool bad -o yaml").output
      << cluster.Log("operator");

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
