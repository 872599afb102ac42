#include "localcluster/node/replica_set_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/time_format.h"
#include "localcluster/node/workload_objects.h"

namespace sluice::node {
namespace replica_set_sync_test {

using nlohmann::json;
using std::chrono::seconds;

Clock::WallTime At(const std::string& text) { return *ParseTime(text); }

const Clock::WallTime kNow = At("2026-03-01T12:00:00Z");
std::string Ago(int s) { return FormatTime(kNow - seconds(s)); }

json MakeReplicaSet(int64_t replicas, int64_t min_ready = 0) {
  json rs = {
      {"apiVersion", "apps/v1"},
      {"kind", "ReplicaSet"},
      {"metadata",
       {{"name", "web-5d8f7c"}, {"namespace", "default"}, {"uid", "rs-uid"}, {"generation", 2}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{"app", "web"}, {"pod-template-hash", "5d8f7c"}}}}},
        {"template",
         {{"metadata",
           {{"labels", {{"app", "web"}, {"pod-template-hash", "5d8f7c"}, {"tier", "front"}}},
            {"annotations", {{"note", "x"}}}}},
          {"spec", {{"containers", json::array({{{"name", "web"}, {"image", "nginx"}}})}}}}}}}};
  if (min_ready > 0) rs["spec"]["minReadySeconds"] = min_ready;
  return rs;
}

struct PodSpec {
  std::string name;
  std::string node = "node-a";
  std::string phase = "Running";
  bool ready = true;
  int ready_since_ago = 600;  // Seconds before kNow the Ready condition last changed.
  int created_ago = 900;
  int restarts = 0;
  std::string owner = "rs-uid";  // "" for an orphan.
};

json MakePod(const PodSpec& p) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", p.name},
        {"namespace", "default"},
        {"uid", "uid-" + p.name},
        {"creationTimestamp", Ago(p.created_ago)},
        {"labels", {{"app", "web"}, {"pod-template-hash", "5d8f7c"}, {"tier", "front"}}}}},
      {"spec", json::object()},
      {"status",
       {{"phase", p.phase},
        {"conditions", json::array({{{"type", "Ready"},
                                     {"status", p.ready ? "True" : "False"},
                                     {"lastTransitionTime", Ago(p.ready_since_ago)}}})},
        {"containerStatuses", json::array({{{"name", "web"}, {"restartCount", p.restarts}}})}}}};
  if (!p.node.empty()) pod["spec"]["nodeName"] = p.node;
  if (!p.owner.empty()) {
    pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", "ReplicaSet"},
                                                       {"name", "web-5d8f7c"},
                                                       {"uid", p.owner},
                                                       {"controller", true}}});
  }
  return pod;
}

std::vector<std::string> Names(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const json& p : pods) out.push_back(p["metadata"]["name"].get<std::string>());
  return out;
}

// --- Scaling up ---------------------------------------------------------------------------------

TEST(ReplicaSetSyncTest, ScaleUpFromZeroCreatesPodsFromTheTemplate) {
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(3), {}, kNow);
  EXPECT_EQ(plan.create, 3);
  EXPECT_TRUE(plan.delete_pods.empty());
  const json& pod = plan.pod;
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["generateName"], "web-5d8f7c-");
  EXPECT_FALSE(pod["metadata"].contains("name"));
  EXPECT_EQ(pod["metadata"]["namespace"], "default");
  EXPECT_EQ(pod["metadata"]["labels"],
            json({{"app", "web"}, {"pod-template-hash", "5d8f7c"}, {"tier", "front"}}));
  EXPECT_EQ(pod["metadata"]["annotations"], json({{"note", "x"}}));
  EXPECT_EQ(pod["metadata"]["ownerReferences"], json::array({{{"apiVersion", "apps/v1"},
                                                              {"kind", "ReplicaSet"},
                                                              {"name", "web-5d8f7c"},
                                                              {"uid", "rs-uid"},
                                                              {"controller", true},
                                                              {"blockOwnerDeletion", true}}}));
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "nginx");
  EXPECT_EQ(plan.status["replicas"], 0);
  EXPECT_EQ(plan.status["observedGeneration"], 2);
  EXPECT_TRUE(plan.status_changed);
}

TEST(ReplicaSetSyncTest, CountsOnlyItsOwnPodsInItsNamespace) {
  PodSpec other{"other"};
  other.owner = "another-rs";
  json elsewhere = MakePod({"elsewhere"});
  elsewhere["metadata"]["namespace"] = "prod";
  ReplicaSetPlan plan = SyncReplicaSet(
      MakeReplicaSet(2), {MakePod({"a"}), MakePod({"b"}), MakePod(other), elsewhere}, kNow);
  EXPECT_EQ(plan.create, 0);
  EXPECT_TRUE(plan.delete_pods.empty());
  EXPECT_TRUE(plan.adopt.empty());
  EXPECT_EQ(plan.status["replicas"], 2);
}

TEST(ReplicaSetSyncTest, CreatesAtMostBurstPerPass) {
  ReplicaSetSyncOptions options;
  options.burst = 4;
  EXPECT_EQ(SyncReplicaSet(MakeReplicaSet(10), {}, kNow, options).create, 4);
}

TEST(ReplicaSetSyncTest, NoCreatesOrDeletesWhileEarlierWritesAreUnobserved) {
  ReplicaSetSyncOptions options;
  options.manage = false;
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(3), {MakePod({"a"})}, kNow, options);
  EXPECT_EQ(plan.create, 0);
  EXPECT_EQ(plan.status["replicas"], 1);  // Status is still computed.
  plan = SyncReplicaSet(MakeReplicaSet(0), {MakePod({"a"})}, kNow, options);
  EXPECT_TRUE(plan.delete_pods.empty());
}

TEST(ReplicaSetSyncTest, NothingIsCreatedWhileTheReplicaSetIsBeingDeleted) {
  json rs = MakeReplicaSet(3);
  rs["metadata"]["deletionTimestamp"] = Ago(1);
  EXPECT_EQ(SyncReplicaSet(rs, {}, kNow).create, 0);
}

// --- Scaling down: kube's victims ---------------------------------------------------------------

struct VictimCase {
  const char* name;
  std::vector<PodSpec> pods;
  int64_t replicas;
  std::vector<std::string> deleted;  // In order.
};

class ReplicaSetVictimTest : public ::testing::TestWithParam<VictimCase> {};

TEST_P(ReplicaSetVictimTest, DeletesInKubesOrder) {
  const VictimCase& c = GetParam();
  std::vector<json> pods;
  for (const PodSpec& p : c.pods) pods.push_back(MakePod(p));
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(c.replicas), pods, kNow);
  EXPECT_EQ(plan.create, 0);
  EXPECT_EQ(Names(plan.delete_pods), c.deleted);
}

PodSpec Unscheduled(std::string name) {
  PodSpec p{std::move(name)};
  p.node = "";
  p.phase = "Pending";
  p.ready = false;
  return p;
}
PodSpec Pending(std::string name) {
  PodSpec p{std::move(name)};
  p.phase = "Pending";
  p.ready = false;
  return p;
}
PodSpec NotReady(std::string name) {
  PodSpec p{std::move(name)};
  p.ready = false;
  return p;
}
PodSpec OnNode(std::string name, std::string node) {
  PodSpec p{std::move(name)};
  p.node = std::move(node);
  return p;
}
PodSpec ReadyAgo(std::string name, int ago) {
  PodSpec p{std::move(name)};
  p.ready_since_ago = ago;
  return p;
}
PodSpec Restarts(std::string name, int n) {
  PodSpec p{std::move(name)};
  p.restarts = n;
  return p;
}
PodSpec CreatedAgo(std::string name, int ago) {
  PodSpec p{std::move(name)};
  p.created_ago = ago;
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Ranking, ReplicaSetVictimTest,
    ::testing::Values(
        VictimCase{"UnscheduledBeforeScheduled",
                   {PodSpec{"running"}, Unscheduled("unscheduled")},
                   1,
                   {"unscheduled"}},
        VictimCase{
            "PendingBeforeRunning", {PodSpec{"running"}, Pending("pending")}, 1, {"pending"}},
        VictimCase{
            "NotReadyBeforeReady", {PodSpec{"ready"}, NotReady("not-ready")}, 1, {"not-ready"}},
        VictimCase{
            "DoubledUpNodeFirst",
            {OnNode("alone", "node-b"), OnNode("pair-1", "node-a"), OnNode("pair-2", "node-a")},
            2,
            {"pair-1"}},
        VictimCase{"ReadyMoreRecentlyFirst",
                   {ReadyAgo("old", 900), ReadyAgo("new", 30), ReadyAgo("mid", 300)},
                   1,
                   {"new", "mid"}},
        VictimCase{
            "MoreRestartsFirst", {Restarts("calm", 0), Restarts("flappy", 7)}, 1, {"flappy"}},
        VictimCase{
            "NewerBeforeOlder",
            {CreatedAgo("oldest", 3000), CreatedAgo("newest", 10), CreatedAgo("middle", 600)},
            1,
            {"newest", "middle"}},
        VictimCase{"CriteriaInPriorityOrder",
                   {CreatedAgo("old-ready", 5000), NotReady("not-ready"),
                    Unscheduled("unscheduled"), Pending("pending"), CreatedAgo("new-ready", 5)},
                   1,
                   {"unscheduled", "pending", "not-ready", "new-ready"}},
        VictimCase{"ScaleToZeroDeletesAll", {PodSpec{"a"}, PodSpec{"b"}}, 0, {"a", "b"}}),
    [](const ::testing::TestParamInfo<VictimCase>& info) { return info.param.name; });

// --- Pods that do not count ---------------------------------------------------------------------

TEST(ReplicaSetSyncTest, TerminalPodsAreDeletedAndReplaced) {
  PodSpec failed{"evicted"};
  failed.phase = "Failed";
  PodSpec done{"done"};
  done.phase = "Succeeded";
  ReplicaSetPlan plan =
      SyncReplicaSet(MakeReplicaSet(2), {MakePod({"a"}), MakePod(failed), MakePod(done)}, kNow);
  EXPECT_EQ(Names(plan.delete_terminal), (std::vector<std::string>{"evicted", "done"}));
  EXPECT_EQ(plan.create, 1);
  EXPECT_TRUE(plan.delete_pods.empty());
  EXPECT_EQ(plan.status["replicas"], 1);
}

TEST(ReplicaSetSyncTest, PodsBeingDeletedAreReplacedAtOnce) {
  json going = MakePod({"going"});
  going["metadata"]["deletionTimestamp"] = Ago(2);
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(2), {MakePod({"a"}), going}, kNow);
  EXPECT_EQ(plan.create, 1);
  EXPECT_TRUE(plan.delete_pods.empty());
  EXPECT_TRUE(plan.delete_terminal.empty());
  EXPECT_EQ(plan.status["replicas"], 1);
}

// --- Adoption -----------------------------------------------------------------------------------

TEST(ReplicaSetSyncTest, AdoptsMatchingOrphansAndReleasesPodsItNoLongerSelects) {
  PodSpec orphan{"orphan"};
  orphan.owner = "";
  PodSpec terminal_orphan{"terminal-orphan"};
  terminal_orphan.owner = "";
  terminal_orphan.phase = "Failed";
  json stranger = MakePod({"stranger"});
  stranger["metadata"].erase("ownerReferences");
  stranger["metadata"]["labels"] = {{"app", "db"}};
  json relabelled = MakePod({"relabelled"});
  relabelled["metadata"]["labels"]["pod-template-hash"] = "other";

  ReplicaSetPlan plan = SyncReplicaSet(
      MakeReplicaSet(2), {MakePod(orphan), MakePod(terminal_orphan), stranger, relabelled}, kNow);
  ASSERT_EQ(Names(plan.adopt), (std::vector<std::string>{"orphan"}));
  EXPECT_EQ(ControllerUid(plan.adopt[0]), "rs-uid");
  ASSERT_EQ(Names(plan.release), (std::vector<std::string>{"relabelled"}));
  EXPECT_EQ(ControllerUid(plan.release[0]), "");
  EXPECT_EQ(plan.status["replicas"], 1);  // The adopted one.
  EXPECT_EQ(plan.create, 1);
}

// --- Status -------------------------------------------------------------------------------------

struct StatusCase {
  const char* name;
  int64_t min_ready;
  std::vector<PodSpec> pods;
  int64_t ready;
  int64_t available;
};

class ReplicaSetStatusTest : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ReplicaSetStatusTest, CountsReadyAndAvailable) {
  const StatusCase& c = GetParam();
  std::vector<json> pods;
  for (const PodSpec& p : c.pods) pods.push_back(MakePod(p));
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(3, c.min_ready), pods, kNow);
  EXPECT_EQ(plan.status["replicas"], static_cast<int64_t>(c.pods.size()));
  EXPECT_EQ(plan.status["readyReplicas"], c.ready);
  EXPECT_EQ(plan.status["availableReplicas"], c.available);
  EXPECT_EQ(plan.status["observedGeneration"], 2);
}

INSTANTIATE_TEST_SUITE_P(
    MinReadySeconds, ReplicaSetStatusTest,
    ::testing::Values(StatusCase{"NoMinReadyAllReadyAvailable",
                                 0,
                                 {ReadyAgo("a", 0), ReadyAgo("b", 5), NotReady("c")},
                                 2,
                                 2},
                      StatusCase{"ReadyLongerThanMinReady",
                                 30,
                                 {ReadyAgo("a", 31), ReadyAgo("b", 29), ReadyAgo("c", 300)},
                                 3,
                                 2},
                      StatusCase{"ExactlyMinReadyIsNotYetAvailable", 30, {ReadyAgo("a", 30)}, 1, 0},
                      StatusCase{"NotReadyIsNeverAvailable", 10, {NotReady("a")}, 0, 0}),
    [](const ::testing::TestParamInfo<StatusCase>& info) { return info.param.name; });

TEST(ReplicaSetSyncTest, FullyLabeledCountsPodsWithEveryTemplateLabel) {
  json partial = MakePod({"partial"});
  partial["metadata"]["labels"].erase("tier");  // The selector still matches.
  ReplicaSetPlan plan = SyncReplicaSet(MakeReplicaSet(2), {MakePod({"full"}), partial}, kNow);
  EXPECT_EQ(plan.status["replicas"], 2);
  EXPECT_EQ(plan.status["fullyLabeledReplicas"], 1);
}

TEST(ReplicaSetSyncTest, UnchangedStatusIsNotRewritten) {
  json rs = MakeReplicaSet(1);
  rs["status"] = {{"replicas", 1},
                  {"fullyLabeledReplicas", 1},
                  {"readyReplicas", 1},
                  {"availableReplicas", 1},
                  {"observedGeneration", 2}};
  EXPECT_FALSE(SyncReplicaSet(rs, {MakePod({"a"})}, kNow).status_changed);
  // Zero counts and absent ones are the same.
  json empty = MakeReplicaSet(0);
  empty["status"] = {{"replicas", 0}, {"observedGeneration", 2}};
  EXPECT_FALSE(SyncReplicaSet(empty, {}, kNow).status_changed);
}

TEST(ReplicaSetSyncTest, ReplicaFailureIsSetByTheCallerAndClearedOnTheNextPass) {
  json status = json::object();
  SetReplicaFailure(status, "FailedCreate", "pods \"x\" is forbidden", kNow);
  ASSERT_EQ(status["conditions"].size(), 1u);
  EXPECT_EQ(status["conditions"][0]["type"], "ReplicaFailure");
  EXPECT_EQ(status["conditions"][0]["status"], "True");
  EXPECT_EQ(status["conditions"][0]["reason"], "FailedCreate");
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], "2026-03-01T12:00:00Z");
  // The same failure later keeps its transition time.
  SetReplicaFailure(status, "FailedCreate", "again", kNow + seconds(60));
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], "2026-03-01T12:00:00Z");
  EXPECT_EQ(status["conditions"][0]["message"], "again");

  json rs = MakeReplicaSet(0);
  rs["status"] = status;
  ReplicaSetPlan plan = SyncReplicaSet(rs, {}, kNow);
  EXPECT_FALSE(plan.status.contains("conditions"));
  EXPECT_TRUE(plan.status_changed);
}

// --- Label selectors ----------------------------------------------------------------------------

struct SelectorCase {
  const char* name;
  json selector;
  json labels;
  bool matches;
};

class LabelSelectorTest : public ::testing::TestWithParam<SelectorCase> {};

TEST_P(LabelSelectorTest, Matches) {
  const SelectorCase& c = GetParam();
  EXPECT_EQ(LabelSelectorMatches(c.selector, c.labels), c.matches);
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, LabelSelectorTest,
    ::testing::Values(
        SelectorCase{"MatchLabels", {{"matchLabels", {{"app", "web"}}}}, {{"app", "web"}}, true},
        SelectorCase{
            "MatchLabelsMismatch", {{"matchLabels", {{"app", "web"}}}}, {{"app", "db"}}, false},
        SelectorCase{
            "In",
            {{"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"a", "b"}}}}}},
            {{"tier", "b"}},
            true},
        SelectorCase{
            "NotInAbsentLabel",
            {{"matchExpressions", {{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"a"}}}}}},
            {{"app", "web"}},
            true},
        SelectorCase{"Exists",
                     {{"matchExpressions", {{{"key", "app"}, {"operator", "Exists"}}}}},
                     {{"app", "x"}},
                     true},
        SelectorCase{"DoesNotExist",
                     {{"matchExpressions", {{{"key", "app"}, {"operator", "DoesNotExist"}}}}},
                     {{"app", "x"}},
                     false},
        SelectorCase{"BothMustHold",
                     {{"matchLabels", {{"app", "web"}}},
                      {"matchExpressions", {{{"key", "tier"}, {"operator", "Exists"}}}}},
                     {{"app", "web"}},
                     false},
        SelectorCase{"UnknownOperatorMatchesNothing",
                     {{"matchExpressions", {{{"key", "app"}, {"operator", "Like"}}}}},
                     {{"app", "web"}},
                     false},
        SelectorCase{"InWithoutValuesIsInvalid",
                     {{"matchExpressions", {{{"key", "app"}, {"operator", "In"}}}}},
                     {{"app", "web"}},
                     false},
        SelectorCase{"NullMatchesNothing", nullptr, {{"app", "web"}}, false}),
    [](const ::testing::TestParamInfo<SelectorCase>& info) { return info.param.name; });

}  // namespace replica_set_sync_test
}  // namespace sluice::node
