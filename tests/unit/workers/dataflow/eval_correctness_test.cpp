// What the DataflowCore counts as a correct eval completion: the full reward, not any reward, so
// partial credit (digit-match, code-exec passing some tests) does not inflate avg@k and pass@k;
// and the figures it reads off whole eval episodes (eval_episodes.h): other policies' rewards and
// the tool-call share.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {
namespace {

using fixtures::MakeDataset;
using fixtures::Single;

// One policy, evaluated at version 0 (atStart) on every eval row with k completions each.
DataflowConfig EvalConfig(int64_t k) {
  DataflowConfig c;
  c.policies = {"actor"};
  c.group_size = 2;
  c.lease_duration = std::chrono::seconds(60);
  c.capacity_groups = 4;
  c.groups_per_batch = 1;
  c.shuffle = false;
  c.sampling = {{"temperature", 1.0}, {"max_tokens", 16}};
  c.workflow = {{"type", "single-turn"}};
  c.eval.every_versions = 1;
  c.eval.k = k;
  c.eval.at_start = true;
  return c;
}

// Leases every pending eval task for a worker hosting `policies`.
std::vector<LeasedTask> LeaseEvalTasks(DataflowCore& core,
                                       const std::vector<std::string>& policies) {
  LeaseRequest req;
  req.worker_id = "w";
  req.pool = "pool";
  req.region = "eu";
  for (const std::string& p : policies) req.hosted_policies[p] = 0;
  req.capacity = 10;
  std::vector<LeasedTask> evals;
  for (LeasedTask& t : core.Lease(req).tasks) {
    if (t.eval) evals.push_back(std::move(t));
  }
  return evals;
}

void SubmitEvalGroup(DataflowCore& core, const LeasedTask& task, std::vector<Sample> samples) {
  auto submitted = core.Submit(fixtures::Group(task, std::move(samples)));
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
}

// Leases every pending eval task and submits rewards[i] as the completions of the i-th.
void SubmitEvalRound(DataflowCore& core, const std::vector<std::vector<double>>& rewards) {
  const std::vector<LeasedTask> evals = LeaseEvalTasks(core, {"actor"});
  ASSERT_EQ(evals.size(), rewards.size());
  for (size_t i = 0; i < evals.size(); ++i) {
    std::vector<Sample> samples;
    for (double r : rewards[i]) samples.push_back(Single(r));
    SubmitEvalGroup(core, evals[i], std::move(samples));
  }
}

TEST(DataflowEvalCorrectnessTest, PartialRewardIsNotCorrect) {
  const Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  ASSERT_EQ(data.eval_size(), 2U);
  FakeClock clock;
  auto core = DataflowCore::Create(EvalConfig(2), &data, &clock, 1);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  // One prompt with a full and a half reward, one with a half and nothing. With reward > 0 as
  // "correct" this would be avg@2 = 3/4 and pass@2 = 1.
  SubmitEvalRound(**core, {{1.0, 0.5}, {0.5, 0.0}});
  const nlohmann::json last = (*core)->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << (*core)->StatusJson().dump();
  EXPECT_EQ(last["version"], 0);
  EXPECT_DOUBLE_EQ(last["overall_avg_at_k"].get<double>(), 0.25);    // 1 of 4 completions.
  EXPECT_DOUBLE_EQ(last["overall_pass_at_k"].get<double>(), 0.5);    // 1 of 2 prompts.
  EXPECT_DOUBLE_EQ(last["overall_mean_reward"].get<double>(), 0.5);  // Partial credit counts here.
  ASSERT_EQ(last["datasets"].size(), 1U);
  EXPECT_EQ(last["datasets"][0]["correct"], 1);
  EXPECT_EQ(last["datasets"][0]["completions"], 4);
}

TEST(DataflowEvalCorrectnessTest, FullRewardWithinRoundingIsCorrect) {
  const Dataset data = MakeDataset(10, 0.2);
  FakeClock clock;
  auto core = DataflowCore::Create(EvalConfig(2), &data, &clock, 1);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  // 1 − 1e-12 (a fraction like 3/3 computed with rounding) is correct; 0.999 is not.
  SubmitEvalRound(**core, {{1.0 - 1e-12, 0.999}, {1.0, 1.0}});
  const nlohmann::json last = (*core)->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << (*core)->StatusJson().dump();
  EXPECT_DOUBLE_EQ(last["overall_avg_at_k"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(last["overall_pass_at_k"].get<double>(), 1.0);
}

// Solve-and-verify: the verifier's reward (1 when its verdict agrees with the solver's
// correctness) is reported per non-primary policy, overall and split by the solver's correctness,
// also for a round that a snapshot and restore cut in two.
TEST(DataflowEvalCorrectnessTest, OtherPoliciesFiguresSurviveASnapshot) {
  const Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  DataflowConfig config = EvalConfig(2);
  config.policies = {"solver", "verifier"};
  config.workflow = {{"type", "solve-and-verify"}};
  FakeClock clock;
  auto core = DataflowCore::Create(config, &data, &clock, 1);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  const std::vector<LeasedTask> evals = LeaseEvalTasks(**core, config.policies);
  ASSERT_EQ(evals.size(), 2U);
  // Correct answers: the verifier agreed once in two; wrong answers: it agreed both times.
  SubmitEvalGroup(**core, evals[0], {fixtures::Duo(1.0, 1.0), fixtures::Duo(1.0, 0.0)});

  auto restored = DataflowCore::Create(config, &data, &clock, 1);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_TRUE((*restored)->RestoreSnapshot((*core)->Snapshot()).ok());
  SubmitEvalGroup(**restored, evals[1], {fixtures::Duo(0.0, 1.0), fixtures::Duo(0.0, 1.0)});

  const nlohmann::json last = (*restored)->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << (*restored)->StatusJson().dump();
  EXPECT_DOUBLE_EQ(last["overall_avg_at_k"].get<double>(), 0.5);  // The solver's accuracy.
  ASSERT_EQ(last["policies"].size(), 1U) << last.dump();
  const nlohmann::json& verifier = last["policies"][0];
  EXPECT_EQ(verifier["policy"], "verifier");
  EXPECT_EQ(verifier["episodes"], 4);
  EXPECT_EQ(verifier["correct_episodes"], 2);
  EXPECT_DOUBLE_EQ(verifier["mean_reward"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(verifier["mean_reward_when_correct"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(verifier["mean_reward_when_wrong"].get<double>(), 1.0);
  EXPECT_FALSE(last.contains("tool_call_share"));  // No tools in this workflow.
}

// Multi-turn: the share of eval episodes whose trajectory counts at least one tool call.
TEST(DataflowEvalCorrectnessTest, ToolCallShareCountsEpisodesWithACall) {
  const Dataset data = MakeDataset(10, 0.2);
  FakeClock clock;
  auto core = DataflowCore::Create(EvalConfig(2), &data, &clock, 1);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  const std::vector<LeasedTask> evals = LeaseEvalTasks(**core, {"actor"});
  ASSERT_EQ(evals.size(), 2U);
  auto agent = [](double reward, uint32_t calls) {
    Sample s = Single(reward);
    s.tool_calls = calls;
    return s;
  };
  SubmitEvalGroup(**core, evals[0], {agent(1.0, 2), agent(0.0, 0)});
  SubmitEvalGroup(**core, evals[1], {agent(1.0, 1), agent(0.0, 0)});
  const nlohmann::json last = (*core)->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << (*core)->StatusJson().dump();
  EXPECT_DOUBLE_EQ(last["tool_call_share"].get<double>(), 0.5);
  EXPECT_EQ(last["tool_call_episodes"], 4);
  EXPECT_EQ(last["episodes_calling_tools"], 2);
  EXPECT_FALSE(last.contains("policies"));  // One policy: nothing besides accuracy.
}

}  // namespace
}  // namespace sluice::dataflow
