// What the DataflowCore counts as a correct eval completion: the full reward, not any reward, so
// partial credit (digit-match, code-exec passing some tests) does not inflate avg@k and pass@k.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataset.h"

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

// Leases every pending eval task and submits rewards[i] as the completions of the i-th.
void SubmitEvalRound(DataflowCore& core, const std::vector<std::vector<double>>& rewards) {
  LeaseRequest req;
  req.worker_id = "w";
  req.pool = "pool";
  req.region = "eu";
  req.hosted_policies = {{"actor", 0}};
  req.capacity = 10;
  std::vector<LeasedTask> evals;
  for (LeasedTask& t : core.Lease(req).tasks) {
    if (t.eval) evals.push_back(std::move(t));
  }
  ASSERT_EQ(evals.size(), rewards.size());
  for (size_t i = 0; i < evals.size(); ++i) {
    TrajectoryGroup g;
    g.task_id = evals[i].task_id;
    g.attempt = evals[i].attempt;
    g.lease_id = evals[i].lease_id;
    g.worker_id = "w";
    g.prompt_id = evals[i].prompt_id;
    g.eval = true;
    for (double r : rewards[i]) g.samples.push_back(Single(r));
    auto submitted = core.Submit(g);
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
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

}  // namespace
}  // namespace sluice::dataflow
