#include "localcluster/node/deployment_sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/time_format.h"
#include "localcluster/node/workload_objects.h"

namespace sluice::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const Clock::WallTime kStart = *ParseTime("2026-03-01T12:00:00Z");

json Template(const std::string& image) {
  return {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec", {{"containers", json::array({{{"name", "web"}, {"image", image}}})}}}};
}

json RollingUpdate(const json& max_surge, const json& max_unavailable) {
  return {{"type", "RollingUpdate"},
          {"rollingUpdate", {{"maxSurge", max_surge}, {"maxUnavailable", max_unavailable}}}};
}

json MakeDeployment(int64_t replicas, const json& strategy = RollingUpdate(1, 0)) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", "web"},
            {"namespace", "default"},
            {"uid", "d-uid"},
            {"generation", 1},
            {"resourceVersion", "1"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", "web"}}}}},
            {"strategy", strategy},
            {"revisionHistoryLimit", 10},
            {"progressDeadlineSeconds", 600},
            {"template", Template("nginx:1")}}}};
}

const json* Condition(const json& status, const std::string& type) {
  if (!status.contains("conditions")) return nullptr;
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

// A namespace with one Deployment: applies each plan as the controller and the API server would,
// and stands in for the ReplicaSet controller by settling ReplicaSet statuses on request.
class Sim {
 public:
  explicit Sim(json d) : d_(std::move(d)) {}

  DeploymentPlan Step() {
    now_ += seconds(1);  // creationTimestamps (seconds) stay ordered.
    DeploymentPlan plan = SyncDeployment(d_, rses_, pods_, now_);
    for (const json& rs : plan.adopt) Replace(rs);
    if (plan.create) {
      json rs = *plan.create;
      rs["metadata"]["uid"] = "rs-uid-" + std::to_string(++uids_);
      rs["metadata"]["creationTimestamp"] = FormatTime(now_);
      rs["metadata"]["generation"] = 1;
      rses_.push_back(rs);
    }
    for (const ReplicaSetChange& c : plan.updates) {
      json rs = c.object;
      if (c.from != c.to) rs["metadata"]["generation"] = rs["metadata"].value("generation", 1) + 1;
      Replace(rs);
    }
    for (const json& gone : plan.delete_replica_sets) {
      std::erase_if(rses_, [&](const json& rs) {
        return rs["metadata"]["name"] == gone["metadata"]["name"];
      });
    }
    if (plan.revision)
      d_["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = *plan.revision;
    d_["status"] = plan.status;
    return plan;
  }

  // Every ReplicaSet runs spec.replicas pods; `available` of them (all when unset) available.
  void Settle(std::optional<int64_t> new_available = std::nullopt) {
    for (json& rs : rses_) {
      const int64_t n = rs["spec"]["replicas"];
      const bool is_new = Name(rs) == NewName();
      const int64_t avail = is_new && new_available ? std::min(n, *new_available) : n;
      rs["status"] = {{"replicas", n},
                      {"readyReplicas", avail},
                      {"availableReplicas", avail},
                      {"observedGeneration", rs["metadata"].value("generation", 1)}};
    }
  }

  void SetTemplate(const json& tmpl) {
    d_["spec"]["template"] = tmpl;
    d_["metadata"]["generation"] = d_["metadata"]["generation"].get<int64_t>() + 1;
  }
  void SetReplicas(int64_t n) {
    d_["spec"]["replicas"] = n;
    d_["metadata"]["generation"] = d_["metadata"]["generation"].get<int64_t>() + 1;
  }

  // Settles and runs passes until a pass changes nothing.
  void RunToCompletion() {
    for (int i = 0; i < 50; ++i) {
      Settle();
      DeploymentPlan plan = Step();
      if (!plan.create && plan.updates.empty() && !plan.status_changed) return;
    }
    FAIL() << "did not converge";
  }

  std::string NewName() const { return "web-" + PodTemplateHash(d_["spec"]["template"]); }
  static std::string Name(const json& rs) { return rs["metadata"]["name"]; }
  // spec.replicas of the current template's ReplicaSet (-1: none) and of all others.
  int64_t NewReplicas() const {
    for (const json& rs : rses_) {
      if (Name(rs) == NewName()) return rs["spec"]["replicas"];
    }
    return -1;
  }
  int64_t OldReplicas() const {
    int64_t n = 0;
    for (const json& rs : rses_) {
      if (Name(rs) != NewName()) n += rs["spec"]["replicas"].get<int64_t>();
    }
    return n;
  }

  json& d() { return d_; }
  std::vector<json>& rses() { return rses_; }
  std::vector<json>& pods() { return pods_; }
  Clock::WallTime& now() { return now_; }

 private:
  void Replace(const json& updated) {
    for (json& rs : rses_) {
      if (Name(rs) == Name(updated)) rs = updated;
    }
  }

  json d_;
  std::vector<json> rses_;
  std::vector<json> pods_;
  Clock::WallTime now_ = kStart;
  int uids_ = 0;
};

// --- A new Deployment ---------------------------------------------------------------------------

TEST(DeploymentSyncTest, NewDeploymentCreatesItsReplicaSetAtFullSize) {
  Sim sim(MakeDeployment(3));
  DeploymentPlan plan = sim.Step();
  ASSERT_TRUE(plan.create.has_value());
  const json& rs = *plan.create;
  const std::string hash = plan.template_hash;
  EXPECT_EQ(hash, PodTemplateHash(Template("nginx:1")));
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["metadata"]["namespace"], "default");
  EXPECT_EQ(rs["spec"]["replicas"], 3);
  EXPECT_EQ(rs["spec"]["selector"],
            json({{"matchLabels", {{"app", "web"}, {"pod-template-hash", hash}}}}));
  EXPECT_EQ(rs["spec"]["template"]["metadata"]["labels"],
            json({{"app", "web"}, {"pod-template-hash", hash}}));
  EXPECT_EQ(rs["metadata"]["labels"], rs["spec"]["template"]["metadata"]["labels"]);
  EXPECT_EQ(rs["metadata"]["ownerReferences"], json::array({{{"apiVersion", "apps/v1"},
                                                             {"kind", "Deployment"},
                                                             {"name", "web"},
                                                             {"uid", "d-uid"},
                                                             {"controller", true},
                                                             {"blockOwnerDeletion", true}}}));
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"], "3");
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"], "4");
  EXPECT_EQ(plan.revision, "1");
  EXPECT_TRUE(plan.updates.empty());

  const json& st = plan.status;
  EXPECT_EQ(st["observedGeneration"], 1);
  EXPECT_EQ(st["replicas"], 0);
  EXPECT_EQ(st["updatedReplicas"], 0);
  EXPECT_EQ(st["unavailableReplicas"], 3);
  const json* available = Condition(st, "Available");
  ASSERT_NE(available, nullptr);
  EXPECT_EQ((*available)["status"], "False");
  EXPECT_EQ((*available)["reason"], "MinimumReplicasUnavailable");
  EXPECT_EQ((*available)["message"], "Deployment does not have minimum availability.");
  const json* progressing = Condition(st, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ((*progressing)["status"], "True");
  EXPECT_EQ((*progressing)["reason"], "NewReplicaSetCreated");
  EXPECT_EQ((*progressing)["message"], "Created new replica set \"web-" + hash + "\"");
}

TEST(DeploymentSyncTest, CompletedRolloutHasTheFieldsRolloutStatusReads) {
  Sim sim(MakeDeployment(3));
  sim.RunToCompletion();
  const json& st = sim.d()["status"];
  // kubectl rollout status: observedGeneration >= generation, updated == spec.replicas,
  // replicas == updated, available == updated, and no ProgressDeadlineExceeded.
  EXPECT_GE(st["observedGeneration"], sim.d()["metadata"]["generation"]);
  EXPECT_EQ(st["updatedReplicas"], 3);
  EXPECT_EQ(st["replicas"], 3);
  EXPECT_EQ(st["availableReplicas"], 3);
  EXPECT_EQ(st["readyReplicas"], 3);
  EXPECT_EQ(st["unavailableReplicas"], 0);
  const json* progressing = Condition(st, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ((*progressing)["status"], "True");
  EXPECT_EQ((*progressing)["reason"], "NewReplicaSetAvailable");
  EXPECT_EQ((*progressing)["message"],
            "ReplicaSet \"" + sim.NewName() + "\" has successfully progressed.");
  const json* available = Condition(st, "Available");
  ASSERT_NE(available, nullptr);
  EXPECT_EQ((*available)["status"], "True");
  EXPECT_EQ((*available)["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ((*available)["message"], "Deployment has minimum availability.");
  EXPECT_EQ(sim.d()["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
  // A settled Deployment needs no writes.
  DeploymentPlan plan = sim.Step();
  EXPECT_FALSE(plan.create);
  EXPECT_TRUE(plan.updates.empty());
  EXPECT_FALSE(plan.status_changed);
}

// --- RollingUpdate ------------------------------------------------------------------------------

TEST(DeploymentSyncTest, RollingUpdateStepByStepWithAvailabilityGating) {
  Sim sim(MakeDeployment(3, RollingUpdate(1, 0)));
  sim.RunToCompletion();
  sim.SetTemplate(Template("nginx:2"));

  struct Expect {
    int64_t new_replicas, old_replicas;
  };
  // Each pass, then the pods the pass asked for start and become available.
  const std::vector<Expect> steps = {{1, 3}, {1, 2}, {2, 2}, {2, 1}, {3, 1}, {3, 0}};
  for (size_t i = 0; i < steps.size(); ++i) {
    DeploymentPlan plan = sim.Step();
    EXPECT_EQ(sim.NewReplicas(), steps[i].new_replicas) << "step " << i;
    EXPECT_EQ(sim.OldReplicas(), steps[i].old_replicas) << "step " << i;
    if (i == 0) {
      ASSERT_TRUE(plan.create);
      EXPECT_EQ(plan.revision, "2");
      EXPECT_EQ(sim.d()["status"]["observedGeneration"], 2);
    }
    // Never more than replicas + maxSurge pods, never fewer than replicas available.
    EXPECT_LE(sim.NewReplicas() + sim.OldReplicas(), 4);
    sim.Settle();
  }
  sim.Step();
  const json& st = sim.d()["status"];
  EXPECT_EQ(st["updatedReplicas"], 3);
  EXPECT_EQ(st["replicas"], 3);
  EXPECT_EQ(st["availableReplicas"], 3);
}

TEST(DeploymentSyncTest, OldPodsStayUntilNewOnesAreAvailable) {
  Sim sim(MakeDeployment(3, RollingUpdate(1, 0)));
  sim.RunToCompletion();
  sim.SetTemplate(Template("nginx:2"));
  sim.Step();
  // The new pod runs but is not available (readiness failing): nothing more happens.
  for (int i = 0; i < 3; ++i) {
    sim.Settle(0);
    DeploymentPlan plan = sim.Step();
    EXPECT_TRUE(plan.updates.empty());
    EXPECT_EQ(sim.NewReplicas(), 1);
    EXPECT_EQ(sim.OldReplicas(), 3);
  }
  const json& st = sim.d()["status"];
  EXPECT_EQ(st["replicas"], 4);
  EXPECT_EQ(st["updatedReplicas"], 1);
  EXPECT_EQ(st["availableReplicas"], 3);
  // Old replicas pending termination: rollout status keeps waiting.
  EXPECT_GT(st["replicas"].get<int64_t>(), st["updatedReplicas"].get<int64_t>());
  sim.Settle(1);
  sim.Step();
  EXPECT_EQ(sim.OldReplicas(), 2);
}

TEST(DeploymentSyncTest, DefaultStrategyFirstStepSurgesAndScalesDownInOnePass) {
  Sim sim(MakeDeployment(4, RollingUpdate("25%", "25%")));
  sim.RunToCompletion();
  sim.SetTemplate(Template("nginx:2"));
  sim.Step();
  EXPECT_EQ(sim.NewReplicas(), 1);  // maxSurge 25% of 4 = 1.
  EXPECT_EQ(sim.OldReplicas(), 3);  // maxUnavailable 25% of 4 = 1.
  sim.RunToCompletion();
  EXPECT_EQ(sim.NewReplicas(), 4);
  EXPECT_EQ(sim.OldReplicas(), 0);
}

TEST(DeploymentSyncTest, UnhealthyOldReplicasAreScaledDownFirst) {
  Sim sim(MakeDeployment(4, RollingUpdate(0, 1)));
  sim.RunToCompletion();
  // Two old pods become unavailable.
  sim.rses()[0]["status"]["availableReplicas"] = 2;
  sim.SetTemplate(Template("nginx:2"));
  sim.Step();
  // Only 2 of the minimum 3 are available, so no healthy replica may go; an unavailable one
  // costs nothing and goes (as many as replicas - minimum available: 1).
  EXPECT_EQ(sim.NewReplicas(), 0);
  EXPECT_EQ(sim.OldReplicas(), 3);
}

struct FencepostCase {
  const char* name;
  json strategy;
  int64_t replicas;
  int64_t surge;
  int64_t unavailable;
};

class FencepostTest : public ::testing::TestWithParam<FencepostCase> {};

TEST_P(FencepostTest, ResolvesSurgeUpAndUnavailableDown) {
  const FencepostCase& c = GetParam();
  const json d = MakeDeployment(c.replicas, c.strategy);
  EXPECT_EQ(MaxSurge(d), c.surge);
  EXPECT_EQ(MaxUnavailable(d), c.unavailable);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, FencepostTest,
    ::testing::Values(
        FencepostCase{"Percent10", RollingUpdate("25%", "25%"), 10, 3, 2},
        FencepostCase{"Percent3", RollingUpdate("25%", "25%"), 3, 1, 0},
        FencepostCase{"Percent1", RollingUpdate("25%", "25%"), 1, 1, 0},
        FencepostCase{"Percent7Unavailable", RollingUpdate(0, "30%"), 7, 0, 2},
        FencepostCase{"Ints", RollingUpdate(2, 1), 5, 2, 1},
        FencepostCase{"BothRoundToZeroGivesOneUnavailable", RollingUpdate(0, "10%"), 3, 0, 1},
        FencepostCase{"ExplicitZeroZeroIsInvalidUseDefaults", RollingUpdate(0, 0), 4, 1, 1},
        FencepostCase{"ZeroPercentsAreZeroToo", RollingUpdate("0%", "0%"), 8, 2, 2},
        FencepostCase{"UnparsableUsesDefaults", RollingUpdate("x", 1), 8, 2, 2},
        FencepostCase{"UnavailableCappedAtReplicas", RollingUpdate(1, 5), 3, 1, 3},
        FencepostCase{"NoReplicasNoUnavailable", RollingUpdate(1, 1), 0, 1, 0},
        FencepostCase{"AbsentFieldsAreDefaults", json{{"type", "RollingUpdate"}}, 8, 2, 2},
        FencepostCase{"RecreateHasNeither", json{{"type", "Recreate"}}, 4, 0, 0}),
    [](const ::testing::TestParamInfo<FencepostCase>& info) { return info.param.name; });

TEST(DeploymentSyncTest, ScaledIntOrPercentRounding) {
  EXPECT_EQ(ScaledIntOrPercent("25%", 10, true), 3);
  EXPECT_EQ(ScaledIntOrPercent("25%", 10, false), 2);
  EXPECT_EQ(ScaledIntOrPercent("100%", 3, false), 3);
  EXPECT_EQ(ScaledIntOrPercent(4, 10, true), 4);
  EXPECT_EQ(ScaledIntOrPercent(-1, 10, true), std::nullopt);
  EXPECT_EQ(ScaledIntOrPercent("25", 10, true), std::nullopt);
  EXPECT_EQ(ScaledIntOrPercent("%", 10, true), std::nullopt);
}

// --- Scaling ------------------------------------------------------------------------------------

TEST(DeploymentSyncTest, ScalingACompleteDeploymentScalesItsReplicaSet) {
  Sim sim(MakeDeployment(3));
  sim.RunToCompletion();
  sim.SetReplicas(5);
  DeploymentPlan plan = sim.Step();
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0].from, 3);
  EXPECT_EQ(plan.updates[0].to, 5);
  EXPECT_EQ(plan.updates[0]
                .object["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
            "5");
  EXPECT_EQ(ScalingMessage(Sim::Name(plan.updates[0].object), 3, 5),
            "Scaled up replica set " + sim.NewName() + " from 3 to 5");
}

TEST(DeploymentSyncTest, ScalingMidRolloutIsProportional) {
  // kube's documented example: replicas 10, maxSurge 3, maxUnavailable 2, scaled to 15 while
  // the old ReplicaSet has 8 and the new 5: 3 more go to the old one and 2 to the new one.
  json d = MakeDeployment(15, RollingUpdate(3, 2));
  d["status"] = {{"replicas", 13}};
  auto rs = [](const std::string& name, const std::string& image, int64_t replicas,
               const std::string& created) {
    json t = Template(image);
    t["metadata"]["labels"]["pod-template-hash"] = name;
    return json{
        {"metadata",
         {{"name", "web-" + name},
          {"namespace", "default"},
          {"uid", "uid-" + name},
          {"creationTimestamp", created},
          {"labels", {{"app", "web"}, {"pod-template-hash", name}}},
          {"annotations",
           {{"deployment.kubernetes.io/desired-replicas", "10"},
            {"deployment.kubernetes.io/max-replicas", "13"},
            {"deployment.kubernetes.io/revision", name == "old" ? "1" : "2"}}},
          {"ownerReferences",
           json::array({{{"uid", "d-uid"}, {"controller", true}, {"kind", "Deployment"}}})}}},
        {"spec", {{"replicas", replicas}, {"template", t}}},
        {"status", {{"replicas", replicas}, {"availableReplicas", replicas}}}};
  };
  d["spec"]["template"] = Template("nginx:2");
  const std::vector<json> rses = {rs("old", "nginx:1", 8, "2026-03-01T10:00:00Z"),
                                  rs("new", "nginx:2", 5, "2026-03-01T11:00:00Z")};
  DeploymentPlan plan = SyncDeployment(d, rses, {}, kStart);
  ASSERT_EQ(plan.updates.size(), 2u);
  for (const ReplicaSetChange& c : plan.updates) {
    if (c.object["metadata"]["name"] == "web-old") {
      EXPECT_EQ(c.to, 11);
    } else {
      EXPECT_EQ(c.to, 7);
    }
    EXPECT_EQ(c.object["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"], "18");
  }
  EXPECT_FALSE(plan.create);
}

// --- Recreate -----------------------------------------------------------------------------------

TEST(DeploymentSyncTest, RecreateStopsOldPodsBeforeStartingNewOnes) {
  Sim sim(MakeDeployment(3, json{{"type", "Recreate"}}));
  sim.RunToCompletion();
  const std::string old_uid = sim.rses()[0]["metadata"]["uid"];
  sim.SetTemplate(Template("nginx:2"));

  DeploymentPlan plan = sim.Step();
  EXPECT_FALSE(plan.create);
  EXPECT_EQ(sim.OldReplicas(), 0);
  EXPECT_EQ(sim.NewReplicas(), -1);
  // The old ReplicaSet still reports pods: wait.
  EXPECT_FALSE(sim.Step().create);
  // Its status is 0 but a pod is still terminating: wait.
  sim.Settle();
  json pod = {{"metadata",
               {{"name", "old-pod"},
                {"namespace", "default"},
                {"deletionTimestamp", "2026-03-01T12:00:00Z"},
                {"ownerReferences", json::array({{{"uid", old_uid}, {"controller", true}}})}}},
              {"status", {{"phase", "Running"}}}};
  sim.pods().push_back(pod);
  EXPECT_FALSE(sim.Step().create);
  // A pod that has finished does not hold the rollout back.
  sim.pods()[0]["status"]["phase"] = "Succeeded";
  plan = sim.Step();
  ASSERT_TRUE(plan.create);
  EXPECT_EQ((*plan.create)["spec"]["replicas"], 3);
  sim.RunToCompletion();
  EXPECT_EQ(sim.NewReplicas(), 3);
  EXPECT_EQ(sim.d()["status"]["updatedReplicas"], 3);
}

// --- Paused -------------------------------------------------------------------------------------

TEST(DeploymentSyncTest, PausedMakesNoRolloutProgressButStillScales) {
  Sim sim(MakeDeployment(3));
  sim.RunToCompletion();
  sim.d()["spec"]["paused"] = true;
  sim.SetTemplate(Template("nginx:2"));
  DeploymentPlan plan = sim.Step();
  EXPECT_FALSE(plan.create);
  EXPECT_TRUE(plan.updates.empty());
  const json* progressing = Condition(plan.status, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ((*progressing)["status"], "Unknown");
  EXPECT_EQ((*progressing)["reason"], "DeploymentPaused");
  EXPECT_EQ((*progressing)["message"], "Deployment is paused");
  EXPECT_EQ(plan.status["observedGeneration"], 2);

  sim.SetReplicas(5);
  sim.Step();
  EXPECT_EQ(sim.OldReplicas(), 5);  // The old template, scaled.
  EXPECT_EQ(sim.NewReplicas(), -1);
  sim.Settle();
  sim.Step();  // Status catches up while still paused.

  sim.d()["spec"]["paused"] = false;
  plan = sim.Step();
  ASSERT_TRUE(plan.create);
  progressing = Condition(plan.status, "Progressing");
  ASSERT_NE(progressing, nullptr);
  // Resumed, then the new ReplicaSet's creation reported in the same pass.
  EXPECT_EQ((*progressing)["reason"], "NewReplicaSetCreated");
  sim.RunToCompletion();
  EXPECT_EQ(sim.NewReplicas(), 5);
  EXPECT_EQ(sim.OldReplicas(), 0);
}

// --- Template hash ------------------------------------------------------------------------------

TEST(DeploymentSyncTest, TemplateHashIsStableAndChangesWithTheTemplate) {
  const std::string a = PodTemplateHash(Template("nginx:1"));
  EXPECT_EQ(a, PodTemplateHash(Template("nginx:1")));
  // Key order in the source does not matter.
  EXPECT_EQ(
      a, PodTemplateHash(json::parse(R"({"spec":{"containers":[{"image":"nginx:1","name":"web"}]},)"
                                     R"("metadata":{"labels":{"app":"web"}}})")));
  EXPECT_NE(a, PodTemplateHash(Template("nginx:2")));
  json annotated = Template("nginx:1");
  annotated["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "now";
  EXPECT_NE(a, PodTemplateHash(annotated));
  EXPECT_NE(a, PodTemplateHash(Template("nginx:1"), 1));
  EXPECT_NE(PodTemplateHash(Template("nginx:1"), 1), PodTemplateHash(Template("nginx:1"), 2));
  EXPECT_GE(a.size(), 1u);
  EXPECT_LE(a.size(), 10u);
  for (char c : a) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) << a;
}

TEST(DeploymentSyncTest, TemplatesCompareWithoutTheHashLabel) {
  json with_hash = Template("nginx:1");
  with_hash["metadata"]["labels"]["pod-template-hash"] = "abc";
  EXPECT_TRUE(TemplatesEqualIgnoringHash(with_hash, Template("nginx:1")));
  json only_hash = {
      {"metadata", {{"labels", {{"pod-template-hash", "abc"}}}, {"creationTimestamp", nullptr}}},
      {"spec", json::object()}};
  EXPECT_TRUE(TemplatesEqualIgnoringHash(only_hash, json{{"spec", json::object()}}));
  EXPECT_FALSE(TemplatesEqualIgnoringHash(with_hash, Template("nginx:2")));
  // Empty and null fields read as absent, at any depth, as in kube's typed comparison.
  json go_encoded = Template("nginx:1");
  go_encoded["spec"]["containers"][0]["resources"] = json::object();
  go_encoded["spec"]["volumes"] = json::array();
  EXPECT_TRUE(TemplatesEqualIgnoringHash(go_encoded, Template("nginx:1")));
  EXPECT_EQ(PodTemplateHash(go_encoded), PodTemplateHash(Template("nginx:1")));
}

// --- Progress deadline --------------------------------------------------------------------------

TEST(DeploymentSyncTest, ProgressIsReportedAndAStuckRolloutTimesOut) {
  json d = MakeDeployment(2, RollingUpdate(1, 0));
  d["spec"]["progressDeadlineSeconds"] = 60;
  Sim sim(d);
  sim.RunToCompletion();
  sim.SetTemplate(Template("nginx:broken"));
  sim.Step();  // New ReplicaSet at 1.
  sim.Settle(0);
  DeploymentPlan plan = sim.Step();
  // The new ReplicaSet's pod exists (more updated replicas): progress.
  const json* progressing = Condition(plan.status, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ((*progressing)["reason"], "ReplicaSetUpdated");
  EXPECT_EQ((*progressing)["message"], "ReplicaSet \"" + sim.NewName() + "\" is progressing.");
  const std::string last_update = (*progressing)["lastUpdateTime"];

  // No progress for 60s: not yet; past it: timed out.
  sim.now() += seconds(58);
  plan = sim.Step();
  EXPECT_EQ((*Condition(plan.status, "Progressing"))["reason"], "ReplicaSetUpdated");
  EXPECT_EQ((*Condition(plan.status, "Progressing"))["lastUpdateTime"], last_update);
  sim.now() += seconds(1);
  plan = sim.Step();
  progressing = Condition(plan.status, "Progressing");
  EXPECT_EQ((*progressing)["status"], "False");
  EXPECT_EQ((*progressing)["reason"], "ProgressDeadlineExceeded");
  EXPECT_EQ((*progressing)["message"],
            "ReplicaSet \"" + sim.NewName() + "\" has timed out progressing.");
  EXPECT_TRUE(plan.status_changed);
  // It stays timed out while nothing changes.
  EXPECT_FALSE(sim.Step().status_changed);
}

TEST(DeploymentSyncTest, AvailableConditionFollowsMaxUnavailable) {
  Sim sim(MakeDeployment(4, RollingUpdate(1, 1)));
  sim.RunToCompletion();
  sim.rses()[0]["status"]["availableReplicas"] = 3;  // 4 - maxUnavailable 1: still fine.
  DeploymentPlan plan = sim.Step();
  EXPECT_EQ((*Condition(plan.status, "Available"))["status"], "True");
  EXPECT_EQ(plan.status["unavailableReplicas"], 1);
  sim.rses()[0]["status"]["availableReplicas"] = 2;
  plan = sim.Step();
  EXPECT_EQ((*Condition(plan.status, "Available"))["status"], "False");
  EXPECT_EQ((*Condition(plan.status, "Available"))["reason"], "MinimumReplicasUnavailable");
}

TEST(DeploymentSyncTest, ReplicaFailureIsCopiedFromTheNewReplicaSet) {
  Sim sim(MakeDeployment(1));
  sim.Step();
  sim.rses()[0]["status"] = {
      {"conditions", json::array({{{"type", "ReplicaFailure"},
                                   {"status", "True"},
                                   {"reason", "FailedCreate"},
                                   {"message", "quota exceeded"},
                                   {"lastTransitionTime", "2026-03-01T12:00:00Z"}}})}};
  DeploymentPlan plan = sim.Step();
  const json* failure = Condition(plan.status, "ReplicaFailure");
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ((*failure)["reason"], "FailedCreate");
  EXPECT_EQ((*failure)["message"], "quota exceeded");
}

TEST(DeploymentSyncTest, CreateFailureStatus) {
  json status = StatusAfterCreateFailure(MakeDeployment(1), "web-abc", "quota exceeded", kStart);
  const json* progressing = Condition(status, "Progressing");
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ((*progressing)["status"], "False");
  EXPECT_EQ((*progressing)["reason"], "ReplicaSetCreateError");
  EXPECT_EQ((*progressing)["message"],
            "Failed to create new replica set \"web-abc\": quota exceeded");
}

// --- Revisions ----------------------------------------------------------------------------------

TEST(DeploymentSyncTest, RollingBackReusesTheOldReplicaSetWithANewRevision) {
  Sim sim(MakeDeployment(2));
  sim.RunToCompletion();
  const std::string first = sim.NewName();
  sim.SetTemplate(Template("nginx:2"));
  sim.RunToCompletion();
  EXPECT_EQ(sim.d()["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
  // kubectl rollout undo writes back the old template as Go encodes it.
  json restored = Template("nginx:1");
  restored["metadata"]["creationTimestamp"] = nullptr;
  restored["spec"]["containers"][0]["resources"] = json::object();
  sim.SetTemplate(restored);
  DeploymentPlan plan = sim.Step();
  EXPECT_FALSE(plan.create);
  EXPECT_EQ(sim.NewName(), first);
  EXPECT_EQ(plan.revision, "3");
  sim.RunToCompletion();
  for (const json& rs : sim.rses()) {
    if (Sim::Name(rs) != first) continue;
    EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3");
    EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"], "1");
    EXPECT_EQ(rs["spec"]["replicas"], 2);
  }
  EXPECT_EQ(sim.rses().size(), 2u);
}

TEST(DeploymentSyncTest, OldReplicaSetsBeyondTheHistoryLimitAreDeleted) {
  json d = MakeDeployment(1);
  d["spec"]["revisionHistoryLimit"] = 2;
  Sim sim(d);
  for (int v = 1; v <= 5; ++v) {
    sim.SetTemplate(Template("nginx:" + std::to_string(v)));
    sim.RunToCompletion();
  }
  // The current one and the two newest old ones remain.
  std::vector<std::string> revisions;
  for (const json& rs : sim.rses()) {
    revisions.push_back(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]);
  }
  std::sort(revisions.begin(), revisions.end());
  EXPECT_EQ(revisions, (std::vector<std::string>{"3", "4", "5"}));
}

TEST(DeploymentSyncTest, HistoryKeepsReplicaSetsThatStillHavePods) {
  json d = MakeDeployment(1);
  d["spec"]["revisionHistoryLimit"] = 0;
  Sim sim(d);
  sim.RunToCompletion();
  const std::string old_name = sim.NewName();
  sim.SetTemplate(Template("nginx:2"));
  sim.RunToCompletion();
  ASSERT_EQ(sim.rses().size(), 1u);  // Drained, then deleted.
  EXPECT_EQ(Sim::Name(sim.rses()[0]), sim.NewName());

  // Scaled to 0 but a pod is still reported (terminating): kept until the status says 0.
  json drained = sim.rses()[0];
  drained["metadata"]["name"] = old_name;
  drained["metadata"]["uid"] = "old-uid";
  drained["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1";
  drained["metadata"]["creationTimestamp"] = "2026-03-01T00:00:00Z";
  drained["spec"]["template"] = Template("nginx:1");
  drained["spec"]["replicas"] = 0;
  drained["status"] = {{"replicas", 1}, {"observedGeneration", 1}};
  std::vector<json> rses = {sim.rses()[0], drained};
  json complete = sim.d();
  EXPECT_TRUE(SyncDeployment(complete, rses, {}, kStart).delete_replica_sets.empty());
  rses[1]["status"]["replicas"] = 0;
  DeploymentPlan plan = SyncDeployment(complete, rses, {}, kStart);
  ASSERT_EQ(plan.delete_replica_sets.size(), 1u);
  EXPECT_EQ(plan.delete_replica_sets[0]["metadata"]["name"], old_name);
}

TEST(DeploymentSyncTest, ABeingDeletedDeploymentOnlyWritesStatus) {
  json d = MakeDeployment(3);
  d["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:00Z";
  DeploymentPlan plan = SyncDeployment(d, {}, {}, kStart);
  EXPECT_FALSE(plan.create);
  EXPECT_TRUE(plan.updates.empty());
  EXPECT_EQ(plan.status["observedGeneration"], 1);
}

// --- Ownership ----------------------------------------------------------------------------------

TEST(DeploymentSyncTest, AdoptsAnOrphanedReplicaSetOfItsTemplate) {
  Sim first(MakeDeployment(2));
  first.RunToCompletion();
  json orphan = first.rses()[0];
  orphan["metadata"].erase("ownerReferences");
  json d = MakeDeployment(2);
  d["metadata"]["uid"] = "d-uid-2";
  DeploymentPlan plan = SyncDeployment(d, {orphan}, {}, kStart);
  ASSERT_EQ(plan.adopt.size(), 1u);
  EXPECT_EQ(ControllerUid(plan.adopt[0]), "d-uid-2");
  EXPECT_FALSE(plan.create);  // Its template is the Deployment's.
  EXPECT_EQ(plan.status["replicas"], 2);
}

TEST(DeploymentSyncTest, AnEmptySelectorSelectsNothingAndWarns) {
  json d = MakeDeployment(1);
  d["spec"]["selector"] = json::object();
  DeploymentPlan plan = SyncDeployment(d, {}, {}, kStart);
  EXPECT_FALSE(plan.create);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "SelectingAll");
  EXPECT_EQ(plan.events[0].message,
            "This deployment is selecting all pods. A non-empty selector is required.");
  EXPECT_EQ(plan.status["observedGeneration"], 1);
}

TEST(DeploymentSyncTest, ScalingMessages) {
  EXPECT_EQ(ScalingMessage("web-5d8f7c", 0, 3), "Scaled up replica set web-5d8f7c from 0 to 3");
  EXPECT_EQ(ScalingMessage("web-5d8f7c", 3, 1), "Scaled down replica set web-5d8f7c from 3 to 1");
}

}  // namespace
}  // namespace sluice::node
