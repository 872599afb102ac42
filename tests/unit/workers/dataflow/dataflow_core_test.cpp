// DataflowCore: creation (bad configs refused) and ingest: duplicate and late submits, the
// bounded memory of completed tasks and acked batches, multi-policy splitting, filters.
#include "workers/dataflow/dataflow_core.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_core_test_support.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"

namespace sluice::dataflow {
namespace {

using core_test_support::BaseConfig;
using core_test_support::DataflowCoreTest;
using core_test_support::Mixed;
using fixtures::Duo;
using fixtures::Group;
using fixtures::Single;
using std::chrono::seconds;

TEST_F(DataflowCoreTest, RejectsBadConfig) {
  DataflowConfig c = BaseConfig();
  c.policies = {};
  EXPECT_EQ(DataflowCore::Create(c, &dataset_, &clock_, 1).status().field(), "policies");
  c = BaseConfig();
  c.policies = {"a", "a"};
  EXPECT_EQ(DataflowCore::Create(c, &dataset_, &clock_, 1).status().field(), "policies[1]");
  c = BaseConfig();
  c.filters = {{"no-such-filter", {}}};
  EXPECT_FALSE(DataflowCore::Create(c, &dataset_, &clock_, 1).ok());
  c = BaseConfig();
  c.curator = "nope";
  EXPECT_FALSE(DataflowCore::Create(c, &dataset_, &clock_, 1).ok());
  c = BaseConfig();
  c.capacity_groups = 0;
  EXPECT_EQ(DataflowCore::Create(c, &dataset_, &clock_, 1).status().field(), "capacity");
}

TEST_F(DataflowCoreTest, RemembersOnlyTheNewestCompletedTasksAndAckedBatches) {
  DataflowConfig config = BaseConfig();
  config.remember_completed_tasks = 2;
  config.remember_acked_batches = 1;
  auto core = Make(config);
  std::vector<LeasedTask> done;
  for (int i = 0; i < 3; ++i) {
    done.push_back(LeaseOne(*core));
    SubmitOk(*core, Mixed(done.back()));
  }
  // The newest two are remembered: a repeat is a duplicate; the oldest is forgotten.
  auto dup = core->Submit(Mixed(done[2]));
  ASSERT_TRUE(dup.ok());
  EXPECT_TRUE(dup->duplicate);
  EXPECT_TRUE(core->Submit(Mixed(done[1]))->duplicate);
  Status forgotten = core->Submit(Mixed(done[0])).status();
  EXPECT_EQ(forgotten.code(), StatusCode::kNotFound);
  EXPECT_NE(forgotten.message().find("forgotten"), std::string::npos);

  std::vector<std::string> batches;
  for (int i = 0; i < 2; ++i) {
    auto batch = core->TakeBatch("actor", 1);
    ASSERT_TRUE(batch.ok() && batch->has_value());
    batches.push_back((*batch)->batch_id);
    ASSERT_TRUE(core->Ack(batches.back()).ok());
  }
  EXPECT_TRUE(core->Ack(batches[1]).ok());  // Remembered: a repeated ack is a no-op.
  EXPECT_EQ(core->Ack(batches[0]).code(), StatusCode::kNotFound);

  // A snapshot keeps the same memory, order included.
  const std::string snap = core->Snapshot();
  auto restored = Make(config);
  ASSERT_TRUE(restored->RestoreSnapshot(snap).ok());
  EXPECT_TRUE(restored->Submit(Mixed(done[2]))->duplicate);
  EXPECT_EQ(restored->Submit(Mixed(done[0])).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(restored->Ack(batches[1]).ok());

  config.remember_completed_tasks = 0;
  EXPECT_EQ(DataflowCore::Create(config, &dataset_, &clock_, 1, nullptr).status().field(),
            "remember_completed_tasks");
}

TEST_F(DataflowCoreTest, DuplicateAndLateSubmits) {
  auto core = Make(BaseConfig());
  LeasedTask first = LeaseOne(*core, "A");
  clock_.Advance(seconds(61));
  LeasedTask second = LeaseOne(*core, "B");  // Lease() expires A's lease first.
  ASSERT_EQ(second.task_id, first.task_id);
  ASSERT_EQ(second.attempt, 2U);

  TrajectoryGroup bad = Mixed(first);
  bad.attempt = 3;
  EXPECT_EQ(core->Submit(bad).status().code(), StatusCode::kInvalidArgument);
  bad = Mixed(first);
  bad.task_id = "task-77";
  EXPECT_EQ(core->Submit(bad).status().code(), StatusCode::kNotFound);
  bad = Mixed(first);
  bad.samples[1].loss_mask.pop_back();
  EXPECT_EQ(core->Submit(bad).status().field(), "samples[1].loss_mask");
  EXPECT_EQ(core->StatusJson()["submits"]["accepted"], 0);

  // A's late submit wins; B's lease is cancelled; B's submit is a duplicate.
  auto late = core->Submit(Mixed(first));
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->late);
  EXPECT_EQ(late->groups_kept, 1);
  EXPECT_EQ(core->StatusJson()["leases_in_flight"], 0);
  EXPECT_EQ(core->Renew(second.lease_id).code(), StatusCode::kNotFound);
  auto dup = core->Submit(Mixed(second));
  ASSERT_TRUE(dup.ok());
  EXPECT_TRUE(dup->duplicate);
  auto dup2 = core->Submit(Mixed(first));
  ASSERT_TRUE(dup2.ok());
  EXPECT_TRUE(dup2->duplicate);
  nlohmann::json st = core->StatusJson();
  EXPECT_EQ(st["policies"]["actor"]["accepted_groups"], 1);
  EXPECT_EQ(st["policies"]["actor"]["buffered_groups"], 1);
  EXPECT_EQ(st["submits"]["duplicates"], 2);
  EXPECT_EQ(st["submits"]["late"], 1);

  // A submit for a task that was re-queued (not re-issued yet) is accepted and withdraws it.
  LeasedTask t = LeaseOne(*core);
  clock_.Advance(seconds(61));
  core->ExpireLeases();
  EXPECT_EQ(core->StatusJson()["pending_tasks"], 1);
  SubmitOk(*core, Mixed(t));
  EXPECT_EQ(core->StatusJson()["pending_tasks"], 0);
  EXPECT_NE(LeaseOne(*core).task_id, t.task_id);
}

TEST_F(DataflowCoreTest, LateSubmitOfSetAsideTaskIsAccepted) {
  DataflowConfig c = BaseConfig();
  c.max_attempts = 1;
  auto core = Make(c);
  LeasedTask t = LeaseOne(*core);
  clock_.Advance(seconds(61));
  core->ExpireLeases();
  ASSERT_EQ(core->StatusJson()["failed_tasks"].size(), 1U);
  SubmitOk(*core, Mixed(t));
  EXPECT_EQ(core->StatusJson()["failed_tasks"].size(), 0U);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["buffered_groups"], 1);
}

TEST_F(DataflowCoreTest, MultiPolicySplittingFeedsEachBuffer) {
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  auto core = Make(c);
  LeasedTask t = LeaseOne(*core);
  auto r = core->Submit(Group(t, {Duo(1, 0), Duo(0, 1)}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->groups_kept, 2);
  EXPECT_EQ(r->samples_kept, 4);
  TrajectoryGroup unknown = Group(LeaseOne(*core), {Duo(1, 0)});
  unknown.samples[0].policies = {"solver", "critic"};
  EXPECT_EQ(core->Submit(unknown).status().field(), "samples[0].policy");

  auto solver = core->TakeBatch("solver", 1);
  ASSERT_TRUE(solver.ok());
  ASSERT_TRUE(solver->has_value());
  const Batch& sb = **solver;
  ASSERT_EQ(sb.samples.size(), 2U);
  EXPECT_EQ(sb.samples[0].policy, "solver");
  EXPECT_EQ(sb.samples[0].loss_mask, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(sb.samples[0].reward, 1);
  EXPECT_EQ(sb.samples[1].reward, 0);
  EXPECT_DOUBLE_EQ(*sb.samples[0].group_mean, 0.5);
  EXPECT_EQ(sb.samples[0].prompt_id, t.prompt_id);

  auto verifier = core->TakeBatch("verifier", 1);
  ASSERT_TRUE(verifier.ok());
  ASSERT_TRUE(verifier->has_value());
  const Batch& vb = **verifier;
  EXPECT_EQ(vb.samples[0].policy, "verifier");
  EXPECT_EQ(vb.samples[0].loss_mask, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(vb.samples[0].reward, 0);
  EXPECT_EQ(vb.samples[1].reward, 1);
  EXPECT_EQ(vb.samples[0].group_id, sb.samples[0].group_id);
  EXPECT_EQ(core->TakeBatch("critic", 1).status().code(), StatusCode::kNotFound);
}

TEST_F(DataflowCoreTest, DynamicSamplingDropsZeroVarianceGroups) {
  DataflowConfig c = BaseConfig();
  c.filters = {{"dynamic-sampling", nlohmann::json::object()}};
  auto core = Make(c);
  auto dropped = core->Submit(Group(LeaseOne(*core), {Single(1), Single(1), Single(1)}));
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(dropped->groups_filtered, 1);
  EXPECT_EQ(dropped->samples_filtered, 3);
  EXPECT_EQ(dropped->groups_kept, 0);
  auto kept = core->Submit(Mixed(LeaseOne(*core)));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->groups_kept, 1);
  nlohmann::json actor = core->StatusJson()["policies"]["actor"];
  EXPECT_EQ(actor["filtered_groups"], 1);
  EXPECT_EQ(actor["filtered_samples"], 3);
  EXPECT_EQ(actor["accepted_groups"], 1);
  EXPECT_EQ(actor["buffered_groups"], 1);
  ASSERT_EQ(actor["filters"].size(), 1U);
  EXPECT_EQ(actor["filters"][0]["type"], "dynamic-sampling");
  EXPECT_EQ(actor["filters"][0]["groups_dropped"], 1);
  EXPECT_EQ(core->StatusJson()["submits"]["accepted"], 2);
}

}  // namespace
}  // namespace sluice::dataflow
