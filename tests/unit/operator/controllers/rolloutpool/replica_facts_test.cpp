// Reading a replica's facts from its Pod, and maxUnavailable from the pool (replica_facts.h).
#include "operator/controllers/rolloutpool/replica_facts.h"

#include <gtest/gtest.h>

namespace sluice::controllers::rolloutpool {
namespace rolloutpool_replica_facts_test {

using nlohmann::json;

// 2026-01-01T00:00:00Z in Unix seconds.
constexpr int64_t kNewYear = 1767225600;

json Pod() {
  return json::parse(R"({
    "metadata": {"name": "p-east-1", "uid": "u1",
                 "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"sluice.dev/region": "east", "sluice.dev/replica-index": "1",
                            "sluice.dev/template-hash": "h1"}},
    "status": {"phase": "Running", "podIP": "10.1.2.3",
               "conditions": [{"type": "PodScheduled", "status": "True"},
                              {"type": "Ready", "status": "True"}]}})");
}

TEST(ReplicaFromPodTest, ReadsARunningReadyReplica) {
  const Replica r = ReplicaFromPod(Pod(), "h1", kNewYear, 60);
  EXPECT_EQ(r.placement.name, "p-east-1");
  EXPECT_EQ(r.placement.region, "east");
  EXPECT_EQ(r.placement.replica_index, 1);
  EXPECT_TRUE(r.placement.ready);
  EXPECT_FALSE(r.placement.draining);
  EXPECT_FALSE(r.placement.unscheduled);
  EXPECT_FALSE(r.placement.pending_since_seconds.has_value());
  EXPECT_EQ(r.uid, "u1");
  EXPECT_EQ(r.phase, "Running");
  EXPECT_EQ(r.url, "https://10.1.2.3:8080");
  EXPECT_TRUE(r.current);
  EXPECT_FALSE(r.terminating);
  EXPECT_FALSE(r.draining_since.has_value());
  EXPECT_FALSE(r.worker.has_value());
  EXPECT_FALSE(ReplicaFromPod(Pod(), "h2", kNewYear, 60).current);
}

TEST(ReplicaFromPodTest, ReadsAnUnschedulablePendingReplica) {
  json pod = Pod();
  pod["status"] = json::parse(R"({"phase": "Pending", "conditions": [
      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
       "message": "0/2 nodes are available"}]})");
  const Replica r = ReplicaFromPod(pod, "h1", kNewYear + 30, 60);
  EXPECT_FALSE(r.placement.ready);
  EXPECT_TRUE(r.placement.pending_unschedulable);
  EXPECT_TRUE(r.placement.unscheduled);
  EXPECT_EQ(r.placement.scheduler_message, "0/2 nodes are available");
  EXPECT_EQ(r.placement.pending_since_seconds, kNewYear);
  EXPECT_EQ(r.url, "");
  // No phase at all reads as Pending.
  pod["status"].erase("phase");
  EXPECT_EQ(ReplicaFromPod(pod, "h1", kNewYear, 60).phase, "Pending");
}

TEST(ReplicaFromPodTest, ReadsDrainingAndTerminating) {
  json pod = Pod();
  pod["metadata"]["annotations"]["sluice.dev/draining-since"] = "2026-01-01T00:00:10Z";
  Replica r = ReplicaFromPod(pod, "h1", kNewYear, 60);
  EXPECT_EQ(r.draining_since, kNewYear + 10);
  EXPECT_TRUE(r.placement.draining);
  EXPECT_FALSE(r.terminating);

  pod["metadata"]["annotations"]["sluice.dev/draining-since"] = "yesterday";
  EXPECT_EQ(ReplicaFromPod(pod, "h1", kNewYear, 60).draining_since, 0);

  json deleted = Pod();
  deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  r = ReplicaFromPod(deleted, "h1", kNewYear + 600, 60);
  EXPECT_TRUE(r.terminating);
  EXPECT_TRUE(r.placement.draining);
  EXPECT_FALSE(r.termination_abandoned);  // Still Ready: its kubelet answers.
  deleted["status"]["conditions"][1]["status"] = "False";
  EXPECT_FALSE(ReplicaFromPod(deleted, "h1", kNewYear + 59, 60).termination_abandoned);
  EXPECT_TRUE(ReplicaFromPod(deleted, "h1", kNewYear + 60, 60).termination_abandoned);
}

TEST(MaxUnavailableTest, ReadsIntegersAndPercentages) {
  struct Row {
    json max_unavailable;
    int64_t replicas;
    int64_t want;
  };
  for (const Row& row : std::vector<Row>{{json(), 10, 1},
                                         {json(3), 10, 3},
                                         {json(0), 10, 1},
                                         {json("25%"), 10, 2},
                                         {json("5%"), 10, 1},
                                         {json("100%"), 8, 8},
                                         {json("4"), 10, 4}}) {
    json pool = {{"spec", {{"replicas", row.replicas}}}};
    if (!row.max_unavailable.is_null()) {
      pool["spec"]["updateStrategy"]["maxUnavailable"] = row.max_unavailable;
    }
    EXPECT_EQ(MaxUnavailable(pool), row.want) << pool.dump();
  }
}

}  // namespace rolloutpool_replica_facts_test
}  // namespace sluice::controllers::rolloutpool
