// Table tests of the TrainerJob plan: fact sets in, verdicts and Pod changes out (plan.h).
#include "operator/controllers/trainerjob/plan.h"

#include <gtest/gtest.h>

namespace sluice::controllers::trainerjob {
namespace trainerjob_plan_test {

constexpr int64_t kNow = 2'000'000;

RankPod Rank(int rank, const std::string& phase = "Running") {
  RankPod p;
  p.name = "job-rank-" + std::to_string(rank);
  p.rank = rank;
  p.current = true;
  p.phase = phase;
  p.created_seconds = kNow - 10;
  return p;
}

RankPod Stale(RankPod p) {
  p.current = false;
  p.name += "-old";
  return p;
}

JobFacts Job(std::vector<RankPod> ranks, const std::string& phase = "Running") {
  JobFacts f;
  f.phase = phase;
  f.replicas = 2;
  f.steps = 10;
  f.ranks = std::move(ranks);
  return f;
}

struct Want {
  Verdict verdict;
  std::vector<std::string> delete_pods;
  std::vector<int> create_ranks;
  std::string message;  // "" : not checked.
};

struct Case {
  std::string name;
  JobFacts facts;
  Want want;
};

class JobPlanTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(JobPlanTableTest, GivesTheVerdict) {
  const Case& c = GetParam();
  const JobPlan got = Plan(c.facts, kNow);
  EXPECT_STREQ(ToString(got.verdict), ToString(c.want.verdict));
  EXPECT_EQ(got.delete_pods, c.want.delete_pods);
  EXPECT_EQ(got.create_ranks, c.want.create_ranks);
  if (!c.want.message.empty()) {
    EXPECT_EQ(got.message, c.want.message);
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const std::vector<std::string> both = {"job-rank-0", "job-rank-1"};
  cases.push_back(
      {"a_new_job_creates_its_whole_gang", Job({}, "Pending"), {Verdict::kRun, {}, {0, 1}, ""}});
  cases.push_back({"a_half_created_gang_gets_its_missing_rank",
                   Job({Rank(0, "Pending")}, "Pending"),
                   {Verdict::kRun, {}, {1}, ""}});
  cases.push_back(
      {"a_running_gang_changes_nothing", Job({Rank(0), Rank(1)}), {Verdict::kRun, {}, {}, ""}});
  {
    RankPod failed = Rank(1, "Failed");
    failed.reason = "OOMKilled";
    cases.push_back(
        {"a_failed_rank_restarts_the_gang",
         Job({Rank(0), failed}),
         {Verdict::kGangRestart, both, {}, "gang restart after rank 1 failed (OOMKilled)"}});
    Case spent{"a_failed_rank_past_the_backoff_limit_fails_the_job",
               Job({Rank(0), failed}),
               {Verdict::kBackoffLimitExceeded,
                both,
                {},
                "rank 1 failed (OOMKilled); the gang was restarted 3 times (backoffLimit 3)"}};
    spent.facts.restarts = 3;
    cases.push_back(spent);
  }
  cases.push_back(
      {"a_rank_that_vanished_while_the_gang_ran_restarts_it",
       Job({Rank(0)}),
       {Verdict::kGangRestart, {"job-rank-0"}, {}, "gang restart after a rank pod disappeared"}});
  {
    RankPod going = Rank(1);
    going.terminating = true;
    cases.push_back({"ranks_already_going_are_not_deleted_again",
                     Job({Rank(0, "Failed"), going}),
                     {Verdict::kGangRestart, {"job-rank-0"}, {}, ""}});
  }
  cases.push_back({"ranks_of_an_older_attempt_go_first",
                   Job({Stale(Rank(0, "Failed")), Rank(0, "Pending"), Stale(Rank(1))}, "Pending"),
                   {Verdict::kClearStale, {"job-rank-0-old", "job-rank-1-old"}, {}, ""}});
  cases.push_back({"rank_0_exiting_0_completes_the_job",
                   Job({Rank(0, "Succeeded"), Rank(1)}),
                   {Verdict::kSucceeded, {}, {}, "all 10 steps completed"}});
  {
    Case reported{"rank_0_reporting_success_completes_the_job",
                  Job({Rank(0), Rank(1)}),
                  {Verdict::kSucceeded, {}, {}, ""}};
    reported.facts.report_phase = "Succeeded";
    cases.push_back(reported);
  }
  {
    Case starved{"a_starved_rank_0_fails_the_job",
                 Job({Rank(0), Rank(1)}),
                 {Verdict::kStarved, both, {}, "Dataflow d: no more data"}};
    starved.facts.starved = "Dataflow d: no more data";
    cases.push_back(starved);
  }
  {
    Case late{"the_deadline_fails_a_running_job",
              Job({Rank(0), Rank(1)}),
              {Verdict::kDeadlineExceeded,
               both,
               {},
               "the job ran longer than activeDeadlineSeconds (60s)"}};
    late.facts.active_deadline_seconds = 60;
    late.facts.start_seconds = kNow - 60;
    cases.push_back(late);
    Case early{"the_deadline_waits", late.facts, {Verdict::kRun, {}, {}, ""}};
    early.facts.start_seconds = kNow - 59;
    cases.push_back(early);
    Case resumed{"a_resumed_job_restarts_its_deadline", late.facts, {Verdict::kRun, {}, {}, ""}};
    resumed.facts.phase = "Suspended";
    cases.push_back(resumed);
  }
  {
    Case suspended{"suspending_deletes_the_ranks",
                   Job({Rank(0), Rank(1)}),
                   {Verdict::kSuspended, both, {}, ""}};
    suspended.facts.suspend = true;
    cases.push_back(suspended);
  }
  cases.push_back({"a_failed_job_deletes_its_ranks",
                   Job({Rank(0), Rank(1)}, "Failed"),
                   {Verdict::kFinished, both, {}, "the job finished"}});
  {
    Case serving{"a_succeeded_rank_0_serves_final_weights_to_lagging_pools",
                 Job({Rank(0), Rank(1)}, "Succeeded"),
                 {Verdict::kServeFinalWeights, {}, {}, ""}};
    serving.facts.lagging_pools = std::vector<std::string>{"pool-a"};
    serving.facts.completion_seconds = kNow - 5;
    cases.push_back(serving);
    Case late{"past_the_grace_the_ranks_go_anyway",
              serving.facts,
              {Verdict::kFinished,
               both,
               {},
               "the job finished; the final weights' grace passed before pool-a loaded them"}};
    late.facts.completion_seconds = kNow - 1000;
    cases.push_back(late);
    Case held{
        "once_every_pool_holds_the_final_version_the_ranks_go",
        serving.facts,
        {Verdict::kFinished, both, {}, "the job finished; every rollout pool holds version 7"}};
    held.facts.lagging_pools = std::vector<std::string>{};
    held.facts.final_version = 7;
    cases.push_back(held);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Facts, JobPlanTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(JobPlanTest, TheTtlDeletesAFinishedJobOrSaysWhenItWill) {
  JobFacts f = Job({}, "Succeeded");
  f.ttl_seconds = 100;
  f.completion_seconds = kNow - 40;
  JobPlan p = Plan(f, kNow);
  EXPECT_FALSE(p.delete_job);
  EXPECT_EQ(p.requeue_after, std::chrono::milliseconds(60'000));
  f.completion_seconds = kNow - 100;
  p = Plan(f, kNow);
  EXPECT_TRUE(p.delete_job);
  f.ttl_seconds.reset();
  p = Plan(f, kNow);
  EXPECT_FALSE(p.delete_job);
  EXPECT_FALSE(p.requeue_after.has_value());
}

TEST(JobPlanTest, AGangStuckUnschedulableIsNotAdmittedAfterTheTimeout) {
  RankPod stuck = Rank(1, "Pending");
  stuck.unschedulable = true;
  stuck.created_seconds = kNow - 119;
  JobFacts f = Job({Rank(0), stuck}, "Pending");
  f.gang_timeout_seconds = 120;
  JobPlan p = Plan(f, kNow);
  EXPECT_FALSE(p.admitted.has_value());  // Not yet: left as it is.
  EXPECT_EQ(p.running, 1);
  EXPECT_FALSE(p.gang_running);
  f.ranks[1].created_seconds = kNow - 120;
  p = Plan(f, kNow);
  ASSERT_TRUE(p.admitted.has_value());
  EXPECT_FALSE(*p.admitted);
  p = Plan(Job({Rank(0), Rank(1)}), kNow);
  EXPECT_EQ(p.admitted, true);
  EXPECT_TRUE(p.gang_running);
  EXPECT_EQ(p.running, 2);
}

TEST(JobPlanTest, LeavingSuspensionIsReported) {
  EXPECT_TRUE(Plan(Job({}, "Suspended"), kNow).resumed);
  EXPECT_FALSE(Plan(Job({}, "Pending"), kNow).resumed);
}

}  // namespace trainerjob_plan_test
}  // namespace sluice::controllers::trainerjob
