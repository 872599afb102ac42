// The TrainerJob reconciler against a real API server, with a fake clock (reconcile_harness.h).
#include "tests/unit/operator/reconcile/reconcile_harness.h"

namespace sluice::op::reconcile_testing {
namespace trainerjob_reconcile_test {

class TrainerJobReconcileTest : public ReconcileTest {
 protected:
  void SetUp() override {
    ReconcileTest::SetUp();
    Create(kJobsGvr, json::parse(R"({
      "apiVersion": "sluice.dev/v1alpha1", "kind": "TrainerJob", "metadata": {"name": "train"},
      "spec": {"policyRef": {"name": "tiny"}, "dataflowRef": {"name": "arith"},
               "replicas": 2, "steps": 10, "runPolicy": {"backoffLimit": 1}}})"));
  }

  void Reconcile() {
    ASSERT_TRUE(WaitCached(manager_->trainer_job_cache(), kJobsGvr, "train"));
    ASSERT_TRUE(WaitPodsCached());
    Result<controllers::ReconcileResult> r =
        manager_->trainer_jobs().Reconcile(std::string(kNs) + "/train");
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  // The rank Pods: name -> the sluice.dev/attempt label.
  std::map<std::string, std::string> Ranks() {
    std::map<std::string, std::string> ranks;
    for (const json& p : List(kPodsGvr)) {
      ranks[p["metadata"]["name"]] =
          p.value("/metadata/labels/sluice.dev~1attempt"_json_pointer, "?");
    }
    return ranks;
  }

  json Condition(const std::string& type) {
    for (const json& c :
         Get(kJobsGvr, "train").value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return json();
  }
};

TEST_F(TrainerJobReconcileTest, AFailedRankRestartsTheWholeGangUntilTheBackoffLimit) {
  Reconcile();
  EXPECT_EQ(Ranks(), (std::map<std::string, std::string>{{"train-0", "0"}, {"train-1", "0"}}));
  EXPECT_EQ(Get(kJobsGvr, "train").value("/status/phase"_json_pointer, ""), "Pending");

  PatchPodStatus("train-1", {{"phase", "Failed"}, {"reason", "OOMKilled"}});
  Reconcile();
  json job = Get(kJobsGvr, "train");
  EXPECT_EQ(job.value("/status/restarts"_json_pointer, -1), 1) << job.dump();
  EXPECT_TRUE(Ranks().empty());
  const std::vector<std::string> reasons = EventReasons("train");
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "GangRestarted"), reasons.end());

  Reconcile();  // The next attempt's gang.
  EXPECT_EQ(Ranks(), (std::map<std::string, std::string>{{"train-0", "1"}, {"train-1", "1"}}));

  PatchPodStatus("train-0", {{"phase", "Failed"}});
  Reconcile();  // backoffLimit 1 is spent.
  job = Get(kJobsGvr, "train");
  EXPECT_EQ(job.value("/status/phase"_json_pointer, ""), "Failed") << job.dump();
  EXPECT_EQ(Condition("Failed").value("reason", ""), "BackoffLimitExceeded");
  EXPECT_TRUE(Ranks().empty());
}

TEST_F(TrainerJobReconcileTest, AGangStuckUnschedulableIsNotAdmittedOnceTheClocksTimeoutPasses) {
  Reconcile();
  const json unschedulable = json::parse(R"({"phase": "Pending", "conditions": [
      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
       "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu"}]})");
  PatchPodStatus("train-1", unschedulable);
  Reconcile();
  EXPECT_NE(Condition("Admitted").value("reason", ""), "GangPending");
  clock_.Advance(std::chrono::seconds(121));  // The gang timeout is 120 s.
  Reconcile();
  const json admitted = Condition("Admitted");
  EXPECT_EQ(admitted.value("status", ""), "False") << admitted.dump();
  EXPECT_EQ(admitted.value("reason", ""), "GangPending");
}

}  // namespace trainerjob_reconcile_test
}  // namespace sluice::op::reconcile_testing
