// Table tests of the RolloutPool plan: fact sets in, actions out (plan.h).
#include "operator/controllers/rolloutpool/plan.h"

#include <gtest/gtest.h>

#include "operator/controllers/rolloutpool/desired_pods.h"

namespace sluice::controllers::rolloutpool {
namespace rolloutpool_plan_test {

constexpr int64_t kNow = 1'000'000;

// A Running, Ready replica of the current template, in region `region`.
Replica Ready(const std::string& name, const std::string& region = "", int index = 0) {
  Replica r;
  r.placement.name = name;
  r.placement.region = region;
  r.placement.replica_index = index;
  r.placement.ready = true;
  r.placement.in_flight = 0;
  r.uid = "uid-" + name;
  r.phase = "Running";
  r.url = "http://10.0.0." + std::to_string(index + 1) + ":8080";
  r.current = true;
  r.worker = WorkerReport{};
  return r;
}

Replica NotReady(Replica r) {
  r.placement.ready = false;
  r.worker.reset();
  return r;
}

Replica AskedAt(Replica r, int64_t since) {
  r.draining_since = since;
  r.placement.draining = true;
  if (r.worker.has_value()) r.worker->draining = true;
  return r;
}

Replica Ended(Replica r, const std::string& phase) {
  r = NotReady(std::move(r));
  r.phase = phase;
  return r;
}

Replica Old(Replica r) {
  r.current = false;
  return r;
}

PoolFacts Pool(std::vector<Replica> replicas, int64_t replicas_wanted) {
  PoolFacts f;
  f.pool = "p";
  f.has_finalizer = true;
  f.grace_seconds = 120;
  f.replicas = std::move(replicas);
  f.targets = {{"", replicas_wanted}};
  return f;
}

Action Act(ActionKind kind, const std::string& replica, const std::string& reason) {
  return Action{kind, replica, reason, "", 0, ""};
}

Action Create(const std::string& region, int index) {
  return Action{
      ActionKind::kCreate, ReplicaPodName("p", region, index), "missing", region, index, ""};
}

std::string Show(const std::vector<Action>& actions) {
  std::string s;
  for (const Action& a : actions) s += "\n  " + ToString(a);
  return s.empty() ? " (none)" : s;
}

struct Case {
  std::string name;
  PoolFacts facts;
  std::vector<Action> want;
};

class PlanTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanTableTest, GivesTheActions) {
  const Case& c = GetParam();
  const std::vector<Action> got = Plan(c.facts, kNow);
  EXPECT_EQ(got, c.want) << "got:" << Show(got) << "\nwant:" << Show(c.want);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  {
    Case c{"steady_pool_does_nothing", Pool({Ready("a", "", 0), Ready("b", "", 1)}, 2), {}};
    cases.push_back(c);
  }
  {
    Case c{"missing_replicas_are_created_at_the_lowest_free_indices",
           Pool({Ready("a", "", 1)}, 3),
           {Create("", 0), Create("", 2)}};
    cases.push_back(c);
  }
  {
    Case c{
        "a_replica_in_its_back_off_is_not_created", Pool({Ready("a", "", 1)}, 3), {Create("", 2)}};
    c.facts.backing_off = {ReplicaPodName("p", "", 0)};
    cases.push_back(c);
  }
  {
    // The busier replica stays; the idle one is asked to drain first.
    Replica busy = Ready("a", "", 0);
    busy.placement.in_flight = 5;
    Case c{"scale_down_asks_the_least_loaded_ready_replica_to_drain",
           Pool({busy, Ready("b", "", 1)}, 1),
           {Act(ActionKind::kAskToDrain, "b", "scale-down")}};
    cases.push_back(c);
  }
  {
    Case c{"a_surplus_replica_that_is_not_ready_is_deleted_at_once",
           Pool({Ready("a", "", 0), NotReady(Ready("b", "", 1))}, 1),
           {Act(ActionKind::kDelete, "b", "scale-down")}};
    cases.push_back(c);
  }
  {
    Replica drained = AskedAt(Ready("b", "", 1), kNow - 5);
    drained.worker->drained = true;
    Case c{"a_drained_replica_is_deleted",
           Pool({Ready("a", "", 0), drained}, 1),
           {Act(ActionKind::kDelete, "b", "drain")}};
    cases.push_back(c);
  }
  {
    Case c{"a_draining_replica_within_its_grace_waits",
           Pool({Ready("a", "", 0), AskedAt(Ready("b", "", 1), kNow - 119)}, 1),
           {}};
    cases.push_back(c);
  }
  {
    Case c{"a_draining_replica_past_its_grace_is_deleted",
           Pool({Ready("a", "", 0), AskedAt(Ready("b", "", 1), kNow - 120)}, 1),
           {Act(ActionKind::kDelete, "b", "drain")}};
    cases.push_back(c);
  }
  {
    // It answers but does not drain: it restarted or lost the request.
    Replica forgot = AskedAt(Ready("b", "", 1), kNow - 5);
    forgot.worker->draining = false;
    Case c{"a_worker_that_forgot_the_drain_is_asked_again",
           Pool({Ready("a", "", 0), forgot}, 1),
           {Act(ActionKind::kAskAgain, "b", "drain")}};
    cases.push_back(c);
  }
  {
    Replica going = AskedAt(Ready("b", "", 1), kNow - 500);
    going.terminating = true;
    Case c{"a_terminating_replica_is_left_alone", Pool({Ready("a", "", 0), going}, 1), {}};
    cases.push_back(c);
  }
  {
    // Deleted now and re-created after its back-off: not created again in the same round (it
    // still holds its name), and not also replaced as an old template.
    Case c{"an_ended_replica_is_deleted_once",
           Pool({Ready("a", "", 0), Old(Ended(Ready("b", "", 1), "Failed"))}, 2),
           {Act(ActionKind::kDeleteEnded, "b", "it ended (Failed)")}};
    cases.push_back(c);
  }
  {
    Case c{"a_rolling_update_replaces_one_replica_within_max_unavailable",
           Pool({Old(Ready("a", "", 0)), Old(Ready("b", "", 1)), Old(Ready("c", "", 2))}, 3),
           {Act(ActionKind::kAskToDrain, "a", "its template changed")}};
    cases.push_back(c);
  }
  {
    Case c{"a_rolling_update_waits_while_a_replica_is_unavailable",
           Pool({Old(Ready("a", "", 0)), Old(Ready("b", "", 1)), NotReady(Ready("c", "", 2))}, 3),
           // The joiner loads its weights from the ready replica with the lowest index.
           {{ActionKind::kSetRelay, "c", "weight relay", "", 0, "http://10.0.0.1:8080"}}};
    cases.push_back(c);
  }
  {
    Case c{"a_rolling_update_spends_a_larger_budget_in_one_region_first",
           Pool({Old(Ready("e0", "east", 0)), Old(Ready("w0", "west", 0)),
                 Old(Ready("e1", "east", 1))},
                3),
           {Act(ActionKind::kAskToDrain, "e0", "its template changed"),
            Act(ActionKind::kAskToDrain, "e1", "its template changed")}};
    c.facts.regional = true;
    c.facts.targets = {{"east", 2}, {"west", 1}};
    c.facts.max_unavailable = 3;
    // Each region's relay is its lowest index; both report it already.
    c.facts.replicas[2].worker->relay = c.facts.replicas[0].url;
    cases.push_back(c);
  }
  {
    Replica stuck = NotReady(Ready("b", "east", 0));
    stuck.phase = "Pending";
    stuck.url = "";
    Case c{
        "a_spilled_replica_leaves_with_its_reason",
        Pool({Ready("a", "west", 0), stuck}, 2),
        {Act(ActionKind::kDelete, "b", "spill-over: its region has no room"), Create("west", 1)}};
    c.facts.regional = true;
    c.facts.targets = {{"east", 0}, {"west", 2}};
    c.facts.spilled = {"b"};
    cases.push_back(c);
  }
  {
    Replica abandoned = AskedAt(NotReady(Ready("b", "", 1)), kNow - 900);
    abandoned.terminating = true;
    abandoned.termination_abandoned = true;
    Case c{"a_replica_its_node_abandoned_is_force_deleted",
           Pool({Ready("a", "", 0), abandoned}, 1),
           {Act(ActionKind::kForceDelete, "b", "its node abandoned its deletion")}};
    cases.push_back(c);
    Case again{"a_replica_is_force_deleted_once", c.facts, {}};
    again.facts.force_deleted = {"uid-b"};
    cases.push_back(again);
  }
  {
    Case c{"a_deleted_pool_drains_every_replica",
           Pool({Ready("a", "", 0), NotReady(Ready("b", "", 1))}, 2),
           {Act(ActionKind::kAskToDrain, "a", "the pool is being deleted"),
            Act(ActionKind::kDelete, "b", "the pool is being deleted")}};
    c.facts.deleting = true;
    cases.push_back(c);
  }
  {
    Case c{"a_deleted_pool_without_replicas_drops_its_finalizer",
           Pool({}, 2),
           {Act(ActionKind::kRemoveFinalizer, "", "no replica is left")}};
    c.facts.deleting = true;
    cases.push_back(c);
    Case gone{"a_deleted_pool_without_its_finalizer_does_nothing", c.facts, {}};
    gone.facts.has_finalizer = false;
    cases.push_back(gone);
  }
  {
    // A joiner (an address, not Ready) loads from its region's relay; a ready replica that
    // reports another relay than its region's is told.
    Replica joiner = NotReady(Ready("e1", "east", 1));
    Replica wrong = Ready("e2", "east", 2);
    wrong.worker->relay = "http://elsewhere:8080";
    Case c{"weight_relays_are_set_where_they_differ",
           Pool({Ready("e0", "east", 0), joiner, wrong}, 3),
           {{ActionKind::kSetRelay, "e1", "weight relay", "", 0, "http://10.0.0.1:8080"},
            {ActionKind::kSetRelay, "e2", "weight relay", "", 0, "http://10.0.0.1:8080"}}};
    c.facts.regional = true;
    c.facts.targets = {{"east", 3}};
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Facts, PlanTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(DrainStepsTest, AReadyReplicaNotYetAskedIsAskedOnce) {
  EXPECT_EQ(DrainSteps(Ready("a"), "why", 120, kNow),
            std::vector<Action>{Act(ActionKind::kAskToDrain, "a", "why")});
}

TEST(DrainStepsTest, ASilentWorkerIsDeletedOnlyWhenItsGraceRunsOut) {
  Replica silent = AskedAt(Ready("a"), kNow - 60);
  silent.worker.reset();
  EXPECT_TRUE(DrainSteps(silent, "why", 120, kNow).empty());
  EXPECT_EQ(DrainSteps(silent, "why", 60, kNow),
            std::vector<Action>{Act(ActionKind::kDelete, "a", "why")});
}

TEST(DrainStepsTest, AForgetfulWorkerPastItsGraceIsAskedAndDeleted) {
  Replica forgot = AskedAt(Ready("a"), kNow - 300);
  forgot.worker->draining = false;
  EXPECT_EQ(DrainSteps(forgot, "why", 120, kNow),
            (std::vector<Action>{Act(ActionKind::kAskAgain, "a", "why"),
                                 Act(ActionKind::kDelete, "a", "why")}));
}

TEST(DrainStepsTest, AnUnreadableDrainTimeCountsAsLongAgo) {
  // ReplicaFromPod reads an unparsable sluice.dev/draining-since as 0.
  EXPECT_EQ(DrainSteps(AskedAt(Ready("a"), 0), "why", 120, kNow),
            std::vector<Action>{Act(ActionKind::kDelete, "a", "why")});
}

TEST(WorkerReportOfTest, ReadsTheFieldsAndToleratesWrongTypes) {
  const WorkerReport r = WorkerReportOf(
      {{"drained", true}, {"draining", true}, {"weights", {{"relay", "http://x:8080"}}}});
  EXPECT_TRUE(r.drained);
  EXPECT_TRUE(r.draining);
  EXPECT_EQ(r.relay, "http://x:8080");
  const WorkerReport odd = WorkerReportOf({{"drained", "yes"}, {"weights", {{"relay", 3}}}});
  EXPECT_FALSE(odd.drained);
  EXPECT_FALSE(odd.draining);
  EXPECT_EQ(odd.relay, "");
  EXPECT_FALSE(WorkerReportOf(nlohmann::json::array()).drained);
}

}  // namespace rolloutpool_plan_test
}  // namespace sluice::controllers::rolloutpool
