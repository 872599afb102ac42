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

// A lagging job watch: the cache still holds the job before the gang restart this controller
// wrote. Acting on it would start attempt 0's ranks again and write restarts 0 back.
TEST_F(TrainerJobReconcileTest, ACacheLaggingItsOwnGangRestartIsNotActedOn) {
  Reconcile();
  const kube::ObjectPtr before =
      manager_->trainer_job_cache().store().Get(std::string(kNs) + "/train");
  ASSERT_TRUE(before);
  PatchPodStatus("train-1", {{"phase", "Failed"}});
  Reconcile();  // The gang restart: restarts 1, the ranks deleted.
  ASSERT_TRUE(WaitPodsCached());
  ASSERT_TRUE(Ranks().empty());

  manager_->trainer_job_cache().mutable_store().Upsert(before);
  Result<controllers::ReconcileResult> r =
      manager_->trainer_jobs().Reconcile(std::string(kNs) + "/train");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->requeue_after.has_value());
  EXPECT_TRUE(Ranks().empty());
  EXPECT_EQ(Get(kJobsGvr, "train").value("/status/restarts"_json_pointer, -1), 1);

  // Once the cache shows the restart, the next attempt's gang starts.
  manager_->trainer_job_cache().mutable_store().Upsert(
      std::make_shared<const json>(Get(kJobsGvr, "train")));
  Reconcile();
  EXPECT_EQ(Ranks(), (std::map<std::string, std::string>{{"train-0", "1"}, {"train-1", "1"}}));
}

// A stale read this controller cannot know about (a restart an earlier operator wrote): the
// status patch carries the read's resourceVersion, so the API server refuses it instead of the
// newer restart count being overwritten.
TEST_F(TrainerJobReconcileTest, StatusFromAStaleReadDoesNotOverwriteANewerWrite) {
  Reconcile();
  const kube::ObjectPtr before =
      manager_->trainer_job_cache().store().Get(std::string(kNs) + "/train");
  ASSERT_TRUE(before);
  PatchPodStatus("train-0", {{"phase", "Running"}});
  PatchPodStatus("train-1", {{"phase", "Running"}});
  Result<json> restarted = Client(kJobsGvr).Patch(
      "train", kube::PatchType::kMerge, json{{"status", {{"restarts", 1}}}}.dump(), {}, "status");
  ASSERT_TRUE(restarted.ok()) << restarted.status().message();
  ASSERT_TRUE(WaitCached(manager_->trainer_job_cache(), kJobsGvr, "train"));
  ASSERT_TRUE(WaitPodsCached());

  // From the stale read the gang runs (a status change to write): the write is refused.
  manager_->trainer_job_cache().mutable_store().Upsert(before);
  Result<controllers::ReconcileResult> r =
      manager_->trainer_jobs().Reconcile(std::string(kNs) + "/train");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->requeue_after.has_value());
  const json job = Get(kJobsGvr, "train");
  EXPECT_EQ(job.value("/status/restarts"_json_pointer, -1), 1) << job.dump();
  EXPECT_NE(job.value("/status/phase"_json_pointer, ""), "Running") << job.dump();

  // From the fresh read, attempt 0's ranks are stale and go.
  manager_->trainer_job_cache().mutable_store().Upsert(std::make_shared<const json>(job));
  Reconcile();
  ASSERT_TRUE(WaitPodsCached());
  for (const json& p : List(kPodsGvr)) {
    EXPECT_TRUE(p.contains("/metadata/deletionTimestamp"_json_pointer) ||
                p.value("/metadata/labels/sluice.dev~1attempt"_json_pointer, "") == "1")
        << p.dump();
  }
}

}  // namespace trainerjob_reconcile_test
}  // namespace sluice::op::reconcile_testing
