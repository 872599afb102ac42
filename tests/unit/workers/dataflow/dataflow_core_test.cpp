#include "workers/dataflow/dataflow_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/dataset.h"
#include "workers/dataflow/trajectory_codec.h"

namespace sluice::dataflow {
namespace {

using fixtures::Duo;
using fixtures::Group;
using fixtures::Single;

using std::chrono::seconds;

using fixtures::MakeDataset;

DataflowConfig BaseConfig() {
  DataflowConfig c;
  c.policies = {"actor"};
  c.group_size = 4;
  c.lease_duration = seconds(60);
  c.max_attempts = 2;
  c.capacity_groups = 8;
  c.groups_per_batch = 2;
  c.ack_timeout = seconds(100);
  c.staleness.max_staleness = 4;
  c.shuffle = false;
  c.sampling = {{"temperature", 1.0}, {"max_tokens", 64}};
  c.workflow = {{"type", "single-turn"}};
  return c;
}

// Rewards 0, 1, 0, 1 (non-zero variance) at `version`.
TrajectoryGroup Mixed(const LeasedTask& t, int64_t version = 0) {
  return Group(t, {Single(0, version), Single(1, version), Single(0, version), Single(1, version)});
}

LeaseRequest Req(int64_t capacity, std::string worker = "w1") {
  LeaseRequest r;
  r.worker_id = std::move(worker);
  r.pool = "pool";
  r.region = "eu";
  r.hosted_policies = {{"actor", 0}};
  r.capacity = capacity;
  return r;
}

class DataflowCoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<DataflowCore> Make(DataflowConfig config, const Dataset* dataset = nullptr,
                                     uint64_t seed = 1) {
    auto core = DataflowCore::Create(std::move(config), dataset ? dataset : &dataset_, &clock_,
                                     seed, [this](const Record& r) { records_.push_back(r); });
    EXPECT_TRUE(core.ok()) << core.status().ToString();
    return std::move(core).value();
  }

  // Returns the only task leased.
  LeasedTask LeaseOne(DataflowCore& core, std::string worker = "w1") {
    LeaseReply r = core.Lease(Req(1, std::move(worker)));
    EXPECT_EQ(r.tasks.size(), 1U);
    return r.tasks.empty() ? LeasedTask{} : r.tasks[0];
  }

  void SubmitOk(DataflowCore& core, const TrajectoryGroup& g) {
    auto r = core.Submit(g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->duplicate);
  }

  FakeClock clock_;
  Dataset dataset_ = MakeDataset(20);
  std::vector<Record> records_;
};

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

TEST_F(DataflowCoreTest, LeaseCarriesTaskFields) {
  auto core = Make(BaseConfig());
  LeaseReply r = core->Lease(Req(2));
  ASSERT_EQ(r.tasks.size(), 2U);
  const LeasedTask& t = r.tasks[0];
  EXPECT_EQ(t.task_id, "task-1");
  EXPECT_EQ(t.lease_id, "lease-1");
  EXPECT_EQ(t.attempt, 1U);
  EXPECT_FALSE(t.eval);
  EXPECT_EQ(t.prompt_id, dataset_.train(0).id);  // shuffle off: source order.
  EXPECT_EQ(t.prompt, dataset_.train(0).prompt);
  EXPECT_EQ(t.answer, dataset_.train(0).answer);
  EXPECT_EQ(t.row, dataset_.train(0).row);
  EXPECT_EQ(t.samples, 4);
  EXPECT_EQ(t.sampling["temperature"], 1.0);
  EXPECT_EQ(t.workflow["type"], "single-turn");
  EXPECT_EQ(t.deadline, clock_.WallNow() + seconds(60));
  EXPECT_EQ(r.tasks[1].prompt_id, dataset_.train(1).id);
  EXPECT_FALSE(r.backpressure);
  EXPECT_EQ(core->StatusJson()["leases_in_flight"], 2);
  EXPECT_EQ(core->StatusJson()["prompts"]["consumed"], 2);
  EXPECT_EQ(records_.size(), 1U);
  EXPECT_EQ(records_[0].type, static_cast<uint32_t>(RecordType::kLease));
}

TEST_F(DataflowCoreTest, RenewReleaseExpiryAndMaxAttempts) {
  auto core = Make(BaseConfig());
  LeaseReply r = core->Lease(Req(2));
  ASSERT_EQ(r.tasks.size(), 2U);
  const std::string a = r.tasks[0].task_id;
  const std::string b = r.tasks[1].task_id;

  clock_.Advance(seconds(30));
  EXPECT_TRUE(core->Renew(r.tasks[0].lease_id).ok());  // Deadline now t=90.
  EXPECT_EQ(core->Renew("lease-99").code(), StatusCode::kNotFound);
  clock_.Advance(seconds(31));  // t=61: b expired, a not.
  EXPECT_EQ(core->Renew(r.tasks[1].lease_id).code(), StatusCode::kGone);
  EXPECT_EQ(core->ExpireLeases(), 1);
  EXPECT_EQ(core->StatusJson()["pending_tasks"], 1);
  clock_.Advance(seconds(30));  // t=91: a expired too.
  EXPECT_EQ(core->ExpireLeases(), 1);
  EXPECT_EQ(core->StatusJson()["leases"]["expired"], 2);

  // Re-queued at the front, most recently expired first, attempts incremented.
  LeaseReply again = core->Lease(Req(3, "w2"));
  ASSERT_EQ(again.tasks.size(), 3U);
  EXPECT_EQ(again.tasks[0].task_id, a);
  EXPECT_EQ(again.tasks[0].attempt, 2U);
  EXPECT_EQ(again.tasks[1].task_id, b);
  EXPECT_EQ(again.tasks[1].attempt, 2U);
  EXPECT_EQ(again.tasks[2].task_id, "task-3");
  EXPECT_EQ(again.tasks[2].attempt, 1U);

  // Release without error: back to the front, no failure counted.
  ASSERT_TRUE(core->Release(again.tasks[0].lease_id).ok());
  EXPECT_EQ(core->Release(again.tasks[0].lease_id).code(), StatusCode::kNotFound);
  LeasedTask third = LeaseOne(*core);
  EXPECT_EQ(third.task_id, a);
  EXPECT_EQ(third.attempt, 3U);

  // Second failure of a and b: set aside (max_attempts 2).
  ASSERT_TRUE(core->Release(third.lease_id, "engine crashed").ok());
  clock_.Advance(seconds(61));
  EXPECT_EQ(core->ExpireLeases(), 2);  // b and task-3.
  nlohmann::json st = core->StatusJson();
  ASSERT_EQ(st["failed_tasks"].size(), 2U);
  EXPECT_EQ(st["failed_tasks"][0]["task_id"], a);
  EXPECT_NE(st["failed_tasks"][0]["error"].get<std::string>().find("engine crashed"),
            std::string::npos);
  EXPECT_EQ(st["failed_tasks"][1]["task_id"], b);
  EXPECT_NE(st["failed_tasks"][1]["error"].get<std::string>().find("expired"), std::string::npos);
  EXPECT_EQ(st["pending_tasks"], 1);  // task-3, first failure.
  EXPECT_EQ(st["leases"]["tasks_failed"], 2);
  EXPECT_EQ(core->Lease(Req(1)).tasks[0].task_id, "task-3");
}

TEST_F(DataflowCoreTest, BackpressureStopsLeasesUntilBatchesAreAcked) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 4;
  auto core = Make(c);
  LeaseReply r = core->Lease(Req(10));
  ASSERT_EQ(r.tasks.size(), 4U);
  EXPECT_TRUE(r.backpressure);
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty());
  for (const LeasedTask& t : r.tasks) SubmitOk(*core, Mixed(t));
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["buffered_groups"], 4);
  EXPECT_TRUE(core->Backpressure());
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty());

  auto batch = core->TakeBatch("actor", 2);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(batch->has_value());
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty()) << "unacked groups still count";
  ASSERT_TRUE(core->Ack((*batch)->batch_id).ok());
  EXPECT_FALSE(core->Backpressure());
  LeaseReply after = core->Lease(Req(10));
  EXPECT_EQ(after.tasks.size(), 2U);
  EXPECT_TRUE(after.backpressure);
  EXPECT_EQ(core->StatusJson()["admission_room"], 0);
}

TEST_F(DataflowCoreTest, StalenessBudgetLeasesOnlyWhatTheTrainerConsumesInTime) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 100;
  c.groups_per_batch = 2;
  c.staleness.max_staleness = 1;  // (1 + 1) batches of 2 groups may be ahead of the trainer.
  auto core = Make(c);
  LeaseReply r = core->Lease(Req(10));
  ASSERT_EQ(r.tasks.size(), 4U);
  EXPECT_TRUE(r.backpressure);
  nlohmann::json st = core->StatusJson();
  EXPECT_EQ(st["admission_limit"], "staleness");
  EXPECT_EQ(st["admission_policy"], "actor");
  for (const LeasedTask& t : r.tasks) SubmitOk(*core, Mixed(t));
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty()) << "buffered groups count";

  // Training one batch frees one batch of room, no more.
  auto batch = core->TakeBatch("actor", 2);
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty()) << "the batch in training counts";
  ASSERT_TRUE(core->Ack((*batch)->batch_id).ok());
  // Until the trained version is announced, a worker still on version 0 is a version behind
  // what the trainer holds: its work would be stale by the time the next batch is served.
  EXPECT_TRUE(core->Lease(Req(10)).tasks.empty()) << "acked, version 1 not announced yet";
  LeaseRequest caught_up = Req(10);
  caught_up.hosted_policies = {{"actor", 1}};
  EXPECT_EQ(core->Lease(caught_up).tasks.size(), 2U) << "a worker already on version 1";
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "u1", "d1", -1}).ok());
  EXPECT_TRUE(core->Lease(caught_up).tasks.empty()) << "the freed batch is leased";

  // A worker whose weights lag the announced version by one gets one batch of budget less.
  LeaseRequest behind = Req(10);  // Hosts version 0.
  core = Make(c);
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "u1", "d1", -1}).ok());
  EXPECT_EQ(core->Lease(behind).tasks.size(), 2U);
  LeaseRequest current = Req(10);
  current.hosted_policies = {{"actor", 1}};
  EXPECT_EQ(core->Lease(current).tasks.size(), 2U) << "the rest of the full budget";

  // A trainer of bigger batches (spec.batch.perPolicy) widens the budget.
  DataflowConfig wide = c;
  wide.groups_per_batch_by_policy = {{"actor", 5}};
  EXPECT_EQ(Make(wide)->Lease(Req(20)).tasks.size(), 10U);
}

// The autoscaling signals of the status: rollout_demand (leases in flight plus the train tasks
// admission would still lease, as many as remain) and each policy's buffer_lag.
TEST_F(DataflowCoreTest, StatusReportsRolloutDemandAndBufferLag) {
  auto core = Make(BaseConfig());  // Capacity 8 binds (the staleness budget is 5 x 2 groups).
  nlohmann::json st = core->StatusJson();
  EXPECT_EQ(st["rollout_demand"], 8);
  EXPECT_EQ(st["policies"]["actor"]["buffer_lag"], 0);

  LeaseReply r = core->Lease(Req(3));
  ASSERT_EQ(r.tasks.size(), 3U);
  EXPECT_EQ(core->StatusJson()["rollout_demand"], 8) << "leased work still counts";
  SubmitOk(*core, Mixed(r.tasks[0]));
  SubmitOk(*core, Mixed(r.tasks[1]));
  EXPECT_EQ(core->StatusJson()["rollout_demand"], 6) << "1 lease + room (8 - 2 buffered - 1)";
  ASSERT_TRUE(core->AnnounceVersion("actor", {3, "u3", "d3", -1}).ok());
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["buffer_lag"], 3);
  auto batch = core->TakeBatch("actor", 2);
  ASSERT_TRUE(batch.ok() && batch->has_value());
  st = core->StatusJson();
  EXPECT_EQ(st["policies"]["actor"]["buffer_lag"], 0) << "the buffer is empty";
  EXPECT_EQ(st["rollout_demand"], 6) << "the batch in training still takes room";

  // At the end of the data only the work that exists counts.
  const Dataset three = MakeDataset(3);
  auto small = Make(BaseConfig(), &three);
  LeaseReply all = small->Lease(Req(10));
  ASSERT_EQ(all.tasks.size(), 3U);
  EXPECT_EQ(small->StatusJson()["rollout_demand"], 3) << "no prompts left: the leases only";
  ASSERT_TRUE(small->Release(all.tasks[0].lease_id).ok());
  EXPECT_EQ(small->StatusJson()["rollout_demand"], 3) << "2 leases + the re-queued task";
}

TEST_F(DataflowCoreTest, RecoveryRegrantsLeasesEvenWhenTheLimitsChanged) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 6;
  auto core = Make(c);
  ASSERT_EQ(core->Lease(Req(10)).tasks.size(), 6U);
  // The Dataflow's capacity was lowered and the pod replaced: the log must still apply.
  DataflowConfig smaller = c;
  smaller.capacity_groups = 2;
  auto recovered = DataflowCore::Create(smaller, &dataset_, &clock_, 1).value();
  for (const Record& rec : records_) ASSERT_TRUE(recovered->ApplyRecord(rec).ok());
  EXPECT_EQ(recovered->StatusJson()["leases_in_flight"], 6);
  EXPECT_EQ(recovered->StatusJson()["admission_room"], 0);
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

// Buffer (arrival order): A fresh, B stale, C fresh, once the policy is at version 3 and
// maxStaleness is 1.
void FillForStaleness(DataflowCore& core, DataflowCoreTest* /*unused*/,
                      const std::function<LeasedTask()>& lease) {
  for (int64_t v : {3, 0, 3}) {
    auto r = core.Submit(Mixed(lease(), v));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_TRUE(core.AnnounceVersion("actor", {3, "u3", "d3", -1}).ok());
}

TEST_F(DataflowCoreTest, StalenessFifoLeavesStaleGroupBehindFreshHead) {
  DataflowConfig c = BaseConfig();
  c.staleness.max_staleness = 1;
  c.staleness.order = QueueOrder::kFifo;
  auto core = Make(c);
  FillForStaleness(*core, this, [&] { return LeaseOne(*core); });
  auto first = core->TakeBatch("actor", 1);
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->samples[0].versions[2], 3);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["stale_dropped_groups"], 0);
  auto second = core->TakeBatch("actor", 1);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->samples[0].task_id, "task-3");
  nlohmann::json actor = core->StatusJson()["policies"]["actor"];
  EXPECT_EQ(actor["stale_dropped_groups"], 1);
  EXPECT_EQ(actor["stale_dropped_samples"], 4);
  EXPECT_EQ(actor["stale_dropped_tokens"], 8);
  EXPECT_EQ(actor["buffered_groups"], 0);
}

TEST_F(DataflowCoreTest, StalenessEdfDropsStaleGroupsFirst) {
  DataflowConfig c = BaseConfig();
  c.staleness.max_staleness = 1;
  c.staleness.order = QueueOrder::kEdf;
  auto core = Make(c);
  FillForStaleness(*core, this, [&] { return LeaseOne(*core); });
  auto first = core->TakeBatch("actor", 1);
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->samples[0].task_id, "task-1");
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["stale_dropped_groups"], 1);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["buffered_groups"], 1);
  // Not enough fresh groups: nothing served, nothing lost.
  auto none = core->TakeBatch("actor", 2);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["buffered_groups"], 1);
}

TEST_F(DataflowCoreTest, StalenessDownWeight) {
  DataflowConfig c = BaseConfig();
  c.staleness.max_staleness = 1;
  c.staleness.stale_action = StaleAction::kDownWeight;
  c.staleness.down_weight_decay = 0.5;
  auto core = Make(c);
  SubmitOk(*core, Mixed(LeaseOne(*core), 0));
  ASSERT_TRUE(core->AnnounceVersion("actor", {3, "u", "d", -1}).ok());
  auto b = core->TakeBatch("actor", 1);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_DOUBLE_EQ((*b)->samples[0].loss_weight, 0.25);  // 0.5^(3 − 0 − 1).
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["down_weighted_samples"], 4);
}

TEST_F(DataflowCoreTest, ReplayRatioMixesConsumedGroups) {
  DataflowConfig c = BaseConfig();
  c.replay.replay_ratio = 0.5;
  auto core = Make(c);
  for (int i = 0; i < 3; ++i) SubmitOk(*core, Mixed(LeaseOne(*core)));
  auto b1 = core->TakeBatch("actor", 2);
  ASSERT_TRUE(b1.ok() && b1->has_value());
  EXPECT_EQ((*b1)->replayed, std::vector<uint8_t>(8, 0));  // Empty memory: all fresh.
  ASSERT_TRUE(core->Ack((*b1)->batch_id).ok());
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["replay_size"], 2);

  auto b2 = core->TakeBatch("actor", 2);
  ASSERT_TRUE(b2.ok() && b2->has_value());
  const Batch& b = **b2;
  ASSERT_EQ(b.samples.size(), 8U);
  EXPECT_EQ(b.group_index, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(b.replayed, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(b.samples[0].task_id, "task-3");  // The fresh one.
  EXPECT_EQ(b.samples[4].task_id, "task-2");  // latest: the most recently consumed.
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["replayed_groups"], 1);
  EXPECT_EQ(b.stats["replayed_groups"], 1);
  ASSERT_TRUE(core->Ack(b.batch_id).ok());
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["replay_size"], 3);  // Fresh one only.
}

TEST_F(DataflowCoreTest, UnackedBatchIsServedAgainAfterTimeout) {
  auto core = Make(BaseConfig());
  for (int i = 0; i < 2; ++i) SubmitOk(*core, Mixed(LeaseOne(*core)));
  auto b = core->TakeBatch("actor", 2);
  ASSERT_TRUE(b.ok() && b->has_value());
  const std::string id = (*b)->batch_id;
  const size_t records = records_.size();
  auto none = core->TakeBatch("actor", 2);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(records_.size(), records) << "no state change, no record";
  clock_.Advance(seconds(99));
  EXPECT_FALSE(core->TakeBatch("actor", 2)->has_value());
  clock_.Advance(seconds(1));
  auto again = core->TakeBatch("actor", 2);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->batch_id, id);
  EXPECT_EQ((*again)->samples.size(), (*b)->samples.size());
  EXPECT_EQ((*again)->stats["serves"], 2);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["reserved_batches"], 1);
  EXPECT_FALSE(core->TakeBatch("actor", 2)->has_value()) << "timer restarted at the re-serve";
  ASSERT_TRUE(core->Ack(id).ok());
  ASSERT_TRUE(core->Ack(id).ok());  // Idempotent.
  EXPECT_EQ(core->Ack("batch-42").code(), StatusCode::kNotFound);
  clock_.Advance(seconds(500));
  EXPECT_FALSE(core->TakeBatch("actor", 2)->has_value());
  nlohmann::json actor = core->StatusJson()["policies"]["actor"];
  EXPECT_EQ(actor["acked_batches"], 1);
  EXPECT_EQ(actor["acked_groups"], 2);
  EXPECT_EQ(actor["served_batches"], 1);
}

TEST_F(DataflowCoreTest, VersionBarrierHoldsTheFastPolicy) {
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.version_barrier = true;
  auto core = Make(c);
  for (int i = 0; i < 3; ++i) SubmitOk(*core, Group(LeaseOne(*core), {Duo(1, 0), Duo(0, 1)}));
  ASSERT_TRUE(core->TakeBatch("solver", 1)->has_value());  // Both at 0.
  ASSERT_TRUE(core->AnnounceVersion("solver", {1, "", "", -1}).ok());
  EXPECT_FALSE(core->TakeBatch("solver", 1)->has_value());  // Verifier still at 0.
  ASSERT_TRUE(core->TakeBatch("verifier", 1)->has_value());
  ASSERT_TRUE(core->AnnounceVersion("verifier", {1, "", "", -1}).ok());
  EXPECT_TRUE(core->TakeBatch("solver", 1)->has_value());
}

TEST_F(DataflowCoreTest, VersionAnnouncementsAppearInLeaseReplies) {
  auto core = Make(BaseConfig());
  EXPECT_TRUE(core->Lease(Req(1)).versions.empty());  // Nothing announced yet.
  VersionInfo v1{1, "http://trainer-0:8080/v1/weights/1", "sha256:aa", -1};
  ASSERT_TRUE(core->AnnounceVersion("actor", v1).ok());
  LeaseReply r = core->Lease(Req(1));
  ASSERT_EQ(r.versions.size(), 1U);
  EXPECT_EQ(r.versions[0].policy, "actor");
  EXPECT_EQ(r.versions[0].version, v1);
  LeaseRequest other = Req(1);
  other.hosted_policies = {{"someone-else", 0}};
  EXPECT_TRUE(core->Lease(other).versions.empty());

  EXPECT_TRUE(core->AnnounceVersion("actor", v1).ok());  // Idempotent retry.
  VersionInfo changed = v1;
  changed.url = "elsewhere";
  EXPECT_EQ(core->AnnounceVersion("actor", changed).code(), StatusCode::kConflict);
  EXPECT_EQ(core->AnnounceVersion("actor", {0, "", "", -1}).code(), StatusCode::kConflict);
  EXPECT_EQ(core->AnnounceVersion("critic", {2, "", "", -1}).code(), StatusCode::kNotFound);
  VersionInfo v2{2, "http://trainer-0:8080/v1/weights/2?base=1", "sha256:bb", 1};
  ASSERT_TRUE(core->AnnounceVersion("actor", v2).ok());
  EXPECT_EQ(core->Lease(Req(1)).versions[0].version, v2);
  EXPECT_EQ(core->CurrentVersion("actor"), 2);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["version"], 2);
}

TEST_F(DataflowCoreTest, EvalRoundsEveryNVersionsScoredAsPassAtK) {
  Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  ASSERT_EQ(data.eval_size(), 2U);
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 1;
  c.eval.every_versions = 2;
  c.eval.k = 4;
  c.eval.sampling = {{"temperature", 0.6}};
  auto core = Make(c, &data);
  LeasedTask train = LeaseOne(*core);
  EXPECT_TRUE(core->Backpressure());
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "", "", -1}).ok());
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 0);
  ASSERT_TRUE(core->AnnounceVersion("actor", {2, "", "", -1}).ok());
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 2);

  // Eval tasks are not held back by admission control.
  LeaseReply r = core->Lease(Req(5));
  ASSERT_EQ(r.tasks.size(), 2U);
  for (const LeasedTask& t : r.tasks) {
    EXPECT_TRUE(t.eval);
    EXPECT_EQ(t.samples, 4);
    EXPECT_EQ(t.sampling["temperature"], 0.6);
    EXPECT_EQ(t.sampling["max_tokens"], 64);
  }
  EXPECT_EQ(r.tasks[0].prompt_id, data.eval(0).id);
  auto e1 = core->Submit(Group(r.tasks[0], {Single(1), Single(0), Single(0), Single(0)}));
  ASSERT_TRUE(e1.ok());
  EXPECT_TRUE(e1->eval);
  EXPECT_TRUE(core->StatusJson()["eval"]["last"].is_null());
  SubmitOk(*core, Group(r.tasks[1], {Single(0), Single(0), Single(0), Single(0)}));
  nlohmann::json last = core->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << core->StatusJson().dump();
  EXPECT_EQ(last["version"], 2);
  EXPECT_EQ(last["k"], 4);
  EXPECT_DOUBLE_EQ(last["overall_pass_at_k"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(last["overall_avg_at_k"].get<double>(), 0.125);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["accepted_groups"], 0);
  // Versions 3 → no round; 5 skips 4 but crosses a multiple → a round.
  ASSERT_TRUE(core->AnnounceVersion("actor", {3, "", "", -1}).ok());
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 0);
  ASSERT_TRUE(core->AnnounceVersion("actor", {5, "", "", -1}).ok());
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 2);
  (void)train;
}

TEST_F(DataflowCoreTest, EvalRoundsCoverAFixedSubsetAndCanStartAtVersionZero) {
  Dataset data = MakeDataset(100, 0.2);  // 20 eval rows.
  ASSERT_EQ(data.eval_size(), 20U);
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 1;
  c.eval.samples = 5;
  c.eval.at_start = true;
  auto core = Make(c, &data);
  // The round at start is there before any announcement, for version 0.
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 5);
  auto eval_prompts = [&] {
    std::vector<std::string> ids;
    for (const LeasedTask& t : core->Lease(Req(50)).tasks) {
      if (t.eval) ids.push_back(t.prompt_id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  const std::vector<std::string> first = eval_prompts();
  ASSERT_EQ(first.size(), 5U);
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "", "", -1}).ok());
  EXPECT_EQ(eval_prompts(), first);  // The same rows every round.

  const std::vector<size_t> rows = EvalRowSubset(20, 5, c.shuffle_seed);
  EXPECT_EQ(rows.size(), 5U);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(EvalRowSubset(20, 5, c.shuffle_seed), rows);  // Deterministic.
  EXPECT_NE(EvalRowSubset(20, 5, c.shuffle_seed + 1), rows);
  EXPECT_EQ(EvalRowSubset(20, 0, 7).size(), 20U);
  EXPECT_EQ(EvalRowSubset(20, 50, 7).size(), 20U);
  std::vector<std::string> expected;
  for (size_t r : rows) expected.push_back(data.eval(r).id);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(first, expected);

  c.eval.samples = -1;
  EXPECT_EQ(DataflowCore::Create(c, &data, &clock_, 1, nullptr).status().field(),
            "evaluation.samples");
}

TEST_F(DataflowCoreTest, EvalRoundsCanSampleTheTrainSplit) {
  Dataset data = MakeDataset(40);  // No eval split.
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 1;
  c.eval.samples = 3;
  c.eval.from_train = true;
  auto core = Make(c, &data);
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "", "", -1}).ok());
  EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 3);
  std::set<std::string> train_ids;
  for (size_t i = 0; i < data.train_size(); ++i) train_ids.insert(data.train(i).id);
  int eval_tasks = 0;
  for (const LeasedTask& t : core->Lease(Req(50)).tasks) {
    if (!t.eval) continue;
    ++eval_tasks;
    EXPECT_EQ(train_ids.count(t.prompt_id), 1U) << t.prompt_id;
  }
  EXPECT_EQ(eval_tasks, 3);
}

// An announcement with `evaluate` queues one eval round at its version (the weights a warm start
// produced, say), whether or not every_versions would have queued one.
TEST_F(DataflowCoreTest, EvaluateFlagQueuesOneEvalRoundAtThatVersion) {
  Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  ASSERT_EQ(data.eval_size(), 2U);
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 3;
  c.eval.k = 4;
  auto core = Make(c, &data);
  auto pending = [&] { return core->StatusJson()["pending_eval_tasks"].get<int64_t>(); };
  auto rounds = [&] { return core->StatusJson()["eval"]["rounds_in_progress"].get<int64_t>(); };
  EXPECT_EQ(pending(), 0);

  VersionInfo v1{1, "u1", "d1", -1, true};
  ASSERT_TRUE(core->AnnounceVersion("actor", v1).ok());
  EXPECT_EQ(pending(), 2);
  EXPECT_EQ(rounds(), 1);
  // The record carries the flag.
  ASSERT_FALSE(records_.empty());
  ASSERT_EQ(records_.back().type, static_cast<uint32_t>(RecordType::kAnnounce));
  EXPECT_EQ(nlohmann::json::from_cbor(records_.back().payload).at("evaluate"), true);
  // Idempotent: the same announcement again queues nothing and records nothing.
  const size_t records = records_.size();
  ASSERT_TRUE(core->AnnounceVersion("actor", v1).ok());
  EXPECT_EQ(records_.size(), records);
  EXPECT_EQ(pending(), 2);
  // The same version without the flag is another announcement: a conflict, nothing queued.
  VersionInfo v1_plain = v1;
  v1_plain.evaluate = false;
  EXPECT_EQ(core->AnnounceVersion("actor", v1_plain).code(), StatusCode::kConflict);
  EXPECT_EQ(pending(), 2);

  // The round is of version 1.
  std::vector<LeasedTask> evals;
  for (const LeasedTask& t : core->Lease(Req(5)).tasks) {
    if (t.eval) evals.push_back(t);
  }
  ASSERT_EQ(evals.size(), 2U);
  for (const LeasedTask& t : evals) {
    SubmitOk(*core, Group(t, {Single(1), Single(1), Single(0), Single(0)}));
  }
  nlohmann::json last = core->StatusJson()["eval"]["last"];
  ASSERT_TRUE(last.is_object()) << core->StatusJson().dump();
  EXPECT_EQ(last["version"], 1);
  EXPECT_DOUBLE_EQ(last["overall_avg_at_k"].get<double>(), 0.5);
  EXPECT_EQ(rounds(), 0);

  // Version 2 (no multiple of 3) without the flag: nothing.
  ASSERT_TRUE(core->AnnounceVersion("actor", {2, "u2", "d2", -1, false}).ok());
  EXPECT_EQ(pending(), 0);
  EXPECT_EQ(rounds(), 0);
  // Version 3 (a multiple) with the flag: one round, not two.
  ASSERT_TRUE(core->AnnounceVersion("actor", {3, "u3", "d3", -1, true}).ok());
  EXPECT_EQ(pending(), 2);
  EXPECT_EQ(rounds(), 1);
  // Version 4 without the flag: nothing; 5 with it: a second round.
  ASSERT_TRUE(core->AnnounceVersion("actor", {4, "u4", "d4", -1}).ok());
  EXPECT_EQ(pending(), 2);
  ASSERT_TRUE(core->AnnounceVersion("actor", {5, "u5", "d5", -1, true}).ok());
  EXPECT_EQ(pending(), 4);
  EXPECT_EQ(rounds(), 2);
}

// Without evaluation configured, or on a policy other than the primary, the flag does nothing;
// with atStart alone it does queue a round.
TEST_F(DataflowCoreTest, EvaluateFlagNeedsEvaluationAndThePrimaryPolicy) {
  Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  {
    auto core = Make(BaseConfig(), &data);  // No evaluation.
    ASSERT_TRUE(core->AnnounceVersion("actor", {1, "u1", "d1", -1, true}).ok());
    const nlohmann::json st = core->StatusJson();
    EXPECT_EQ(st["policies"]["actor"]["version"], 1);
    EXPECT_EQ(st["pending_eval_tasks"], 0);
    EXPECT_EQ(st["eval"]["rounds_in_progress"], 0);
  }
  {
    DataflowConfig c = BaseConfig();
    c.eval.at_start = true;  // every_versions 0: only the round at start, and requested ones.
    auto core = Make(c, &data);
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 2);
    ASSERT_TRUE(core->AnnounceVersion("actor", {1, "u1", "d1", -1, true}).ok());
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 4);
    EXPECT_EQ(core->StatusJson()["eval"]["rounds_in_progress"], 2);
    ASSERT_TRUE(core->AnnounceVersion("actor", {2, "u2", "d2", -1, false}).ok());
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 4);
  }
  {
    DataflowConfig c = BaseConfig();
    c.policies = {"solver", "verifier"};
    c.eval.every_versions = 5;
    auto core = Make(c, &data);
    ASSERT_TRUE(core->AnnounceVersion("verifier", {1, "v1", "e1", -1, true}).ok());
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 0);
    ASSERT_TRUE(core->AnnounceVersion("solver", {1, "u1", "d1", -1, true}).ok());
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 2);
  }
}

// With the version barrier a round waits for the slowest policy: it is queued when the last
// policy reaches the version (a warm start that ends before the other's queues nothing), and
// labelled with that version.
TEST_F(DataflowCoreTest, BarrierEvalRoundsWaitForEveryPolicy) {
  Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.version_barrier = true;
  c.eval.every_versions = 5;
  auto core = Make(c, &data);
  auto pending = [&] { return core->StatusJson()["pending_eval_tasks"].get<int64_t>(); };
  // The solver's warm start ends first: no round yet, whatever it asks for.
  ASSERT_TRUE(core->AnnounceVersion("solver", {3, "u3", "d3", -1, true}).ok());
  EXPECT_EQ(pending(), 0);
  // The verifier's ends at the same version: now one round, at version 3.
  ASSERT_TRUE(core->AnnounceVersion("verifier", {3, "v3", "e3", -1, true}).ok());
  EXPECT_EQ(pending(), 2);
  // The periodic round at 5 waits for the second policy to get there too.
  ASSERT_TRUE(core->AnnounceVersion("solver", {4, "u4", "d4", -1}).ok());
  ASSERT_TRUE(core->AnnounceVersion("verifier", {4, "v4", "e4", -1}).ok());
  ASSERT_TRUE(core->AnnounceVersion("solver", {5, "u5", "d5", -1}).ok());
  EXPECT_EQ(pending(), 2);
  ASSERT_TRUE(core->AnnounceVersion("verifier", {5, "v5", "e5", -1}).ok());
  EXPECT_EQ(pending(), 4);
  EXPECT_EQ(core->StatusJson()["eval"]["rounds_in_progress"], 2);
  std::vector<LeasedTask> evals;
  for (const LeasedTask& t : core->Lease(Req(8)).tasks) {
    if (t.eval) evals.push_back(t);
  }
  ASSERT_EQ(evals.size(), 4U);
  for (const LeasedTask& t : evals) {
    SubmitOk(*core, Group(t, {Single(1), Single(1), Single(0), Single(0)}));
  }
  // Scored in queue order: the last report is the round at 5.
  EXPECT_EQ(core->StatusJson()["eval"]["last"]["version"], 5);
}

// Recovery from the log and from a snapshot keeps the flag (so the idempotent re-announce still
// matches and queues no second round), and records and snapshots written before the flag
// existed still load, as announcements without it.
TEST_F(DataflowCoreTest, EvaluateFlagSurvivesReplayAndSnapshot) {
  Dataset data = MakeDataset(10, 0.2);  // 2 eval rows.
  DataflowConfig c = BaseConfig();
  c.eval.every_versions = 10;
  auto original = Make(c, &data);
  const VersionInfo v1{1, "u1", "d1", -1, true};
  ASSERT_TRUE(original->AnnounceVersion("actor", v1).ok());
  ASSERT_EQ(records_.size(), 1U);
  EXPECT_EQ(original->StatusJson()["pending_eval_tasks"], 2);

  auto from_log = DataflowCore::Create(c, &data, &clock_, 1).value();
  ASSERT_TRUE(from_log->ApplyRecord(records_[0]).ok());
  auto from_snapshot = DataflowCore::Create(c, &data, &clock_, 1).value();
  ASSERT_TRUE(from_snapshot->RestoreSnapshot(original->Snapshot()).ok());
  for (DataflowCore* core : {from_log.get(), from_snapshot.get()}) {
    EXPECT_EQ(core->StatusJson(), original->StatusJson());
    EXPECT_TRUE(core->Snapshot() == original->Snapshot());
    ASSERT_TRUE(core->AnnounceVersion("actor", v1).ok());  // Still the same announcement.
    VersionInfo plain = v1;
    plain.evaluate = false;
    EXPECT_EQ(core->AnnounceVersion("actor", plain).code(), StatusCode::kConflict);
    EXPECT_EQ(core->StatusJson()["pending_eval_tasks"], 2);
    EXPECT_EQ(core->StatusJson()["eval"]["rounds_in_progress"], 1);
  }

  // A record without "evaluate" (an older log): an announcement without the flag.
  nlohmann::json old_record = nlohmann::json::from_cbor(records_[0].payload);
  ASSERT_EQ(old_record.erase("evaluate"), 1U);
  const std::vector<uint8_t> old_bytes = nlohmann::json::to_cbor(old_record);
  auto from_old_log = DataflowCore::Create(c, &data, &clock_, 1).value();
  ASSERT_TRUE(from_old_log
                  ->ApplyRecord({static_cast<uint32_t>(RecordType::kAnnounce),
                                 std::string(old_bytes.begin(), old_bytes.end())})
                  .ok());
  EXPECT_EQ(from_old_log->CurrentVersion("actor"), 1);
  EXPECT_EQ(from_old_log->StatusJson()["pending_eval_tasks"], 0);
  VersionInfo plain = v1;
  plain.evaluate = false;
  EXPECT_TRUE(from_old_log->AnnounceVersion("actor", plain).ok());

  // A snapshot without it (an older snapshot).
  nlohmann::json old_snapshot = nlohmann::json::from_cbor(original->Snapshot());
  for (nlohmann::json& p : old_snapshot.at("policies")) {
    ASSERT_EQ(p.at("version").erase("evaluate"), 1U);
  }
  const std::vector<uint8_t> snapshot_bytes = nlohmann::json::to_cbor(old_snapshot);
  auto from_old_snapshot = DataflowCore::Create(c, &data, &clock_, 1).value();
  ASSERT_TRUE(
      from_old_snapshot->RestoreSnapshot(std::string(snapshot_bytes.begin(), snapshot_bytes.end()))
          .ok());
  EXPECT_EQ(from_old_snapshot->CurrentVersion("actor"), 1);
  EXPECT_EQ(from_old_snapshot->StatusJson()["pending_eval_tasks"], 2);  // The round itself.
  EXPECT_TRUE(from_old_snapshot->AnnounceVersion("actor", plain).ok());
  EXPECT_EQ(from_old_snapshot->AnnounceVersion("actor", v1).code(), StatusCode::kConflict);
}

TEST_F(DataflowCoreTest, CuratorSkipsSolvedPrompts) {
  Dataset data = MakeDataset(3);
  DataflowConfig c = BaseConfig();
  c.curator = "filter-solved";
  c.curator_options = {{"threshold", 0.5}, {"decay", 0.0}};
  c.epochs = 2;
  auto core = Make(c, &data);
  for (int i = 0; i < 3; ++i) {
    LeasedTask t = LeaseOne(*core);
    // Prompt 0 solved by every sample; the others not.
    const double r = t.prompt_id == data.train(0).id ? 1.0 : 0.0;
    SubmitOk(*core, Group(t, {Single(r), Single(r)}));
  }
  LeaseReply second = core->Lease(Req(5));
  ASSERT_EQ(second.tasks.size(), 2U);
  for (const LeasedTask& t : second.tasks) EXPECT_NE(t.prompt_id, data.train(0).id);
  nlohmann::json st = core->StatusJson();
  EXPECT_EQ(st["prompts"]["skipped"], 1);
  EXPECT_EQ(st["prompts"]["consumed"], 6);
  EXPECT_EQ(st["dataset_done"], true);
  EXPECT_TRUE(core->Lease(Req(5)).tasks.empty());
}

// ---- Recovery. ----

// Drives a core through a scripted sequence touching every record type.
void Script(DataflowCore& core, FakeClock& clock, int phase) {
  auto lease = [&](int64_t n, const std::string& w) { return core.Lease(Req(n, w)).tasks; };
  auto submit = [&](const LeasedTask& t, int64_t v) {
    std::vector<Sample> samples;
    for (int i = 0; i < 4; ++i) samples.push_back(Duo(i % 2, (i + 1) % 3 == 0 ? 1 : 0));
    for (Sample& s : samples) s.versions = {-1, v, v, v};
    (void)core.Submit(Group(t, samples));
  };
  if (phase == 0) {
    auto ts = lease(4, "a");
    submit(ts[0], 0);
    submit(ts[1], 0);
    submit(ts[1], 0);  // Duplicate.
    clock.Advance(seconds(30));
    (void)core.Renew(ts[2].lease_id);
    (void)core.Release(ts[3].lease_id, "oom");
    clock.Advance(seconds(65));  // ts[2] (renewed at 30) expires.
    EXPECT_EQ(core.ExpireLeases(), 1);
    auto more = lease(3, "b");
    for (const LeasedTask& t : more) submit(t, 1);
    submit(ts[2], 0);  // Late or duplicate.
    (void)core.AnnounceVersion("solver", {1, "u1", "d1", -1});
    auto b = core.TakeBatch("solver", 2);
    if (b.ok() && b->has_value()) (void)core.Ack((*b)->batch_id);
  } else {
    (void)core.TakeBatch("verifier", 2);  // Left unacked.
    auto ts = lease(3, "c");
    for (const LeasedTask& t : ts) submit(t, 1);
    (void)core.AnnounceVersion("solver", {2, "u2", "d2", 1});
    (void)core.AnnounceVersion("verifier", {4, "v4", "e4", -1});
    clock.Advance(seconds(150));
    (void)core.TakeBatch("verifier", 2);  // Re-served.
    (void)core.TakeBatch("solver", 2);
    auto evals = lease(2, "d");
    for (const LeasedTask& t : evals) submit(t, 2);
    (void)core.TakeBatch("solver", 3);
    // A requested eval round at a version that is no multiple of every_versions.
    (void)core.AnnounceVersion("solver", {3, "u3", "d3", -1, true});
  }
}

DataflowConfig RecoveryConfig() {
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.curator = "greso";
  c.replay.replay_ratio = 0.5;
  c.replay.selector = ReplaySelector::kPrioritized;
  c.staleness.max_staleness = 1;
  c.group_stats.advantage = AdvantageMode::kGrpo;
  c.filters = {{"length", {{"maxTokens", 100}}}};
  c.eval.every_versions = 2;
  c.eval.k = 4;
  c.eval.samples = 2;      // A subset of the eval split,
  c.eval.at_start = true;  // and a round queued at creation: recovery must reproduce both.
  c.capacity_groups = 6;
  // Batches of 8 (half replayed): the staleness budget, 2 x 4 groups, leaves capacity binding.
  c.groups_per_batch_by_policy = {{"solver", 8}, {"verifier", 8}};
  c.shuffle = true;
  c.shuffle_seed = 3;
  return c;
}

std::string EncodeOrDie(const Batch& b) {
  std::string out;
  EXPECT_TRUE(EncodeBatch(b, &out).ok());
  return out;
}

// Compares the observable state of `cores` with that of cores[0], then runs the same calls on
// all of them (next batches, next leases) and compares the results.
void ExpectSameState(const std::vector<DataflowCore*>& cores) {
  DataflowCore& a = *cores[0];
  for (size_t i = 1; i < cores.size(); ++i) {
    EXPECT_EQ(a.StatusJson(), cores[i]->StatusJson()) << i;
    EXPECT_TRUE(a.Snapshot() == cores[i]->Snapshot()) << i;
  }
  for (const char* policy : {"solver", "verifier"}) {
    for (int round = 0; round < 2; ++round) {
      std::vector<std::string> encoded;
      for (DataflowCore* core : cores) {
        auto b = core->TakeBatch(policy, 1);
        ASSERT_TRUE(b.ok());
        encoded.push_back(b->has_value() ? EncodeOrDie(**b) : "none");
      }
      for (size_t i = 1; i < cores.size(); ++i) EXPECT_TRUE(encoded[0] == encoded[i]) << i;
    }
  }
  std::vector<std::vector<std::string>> leased;
  for (DataflowCore* core : cores) {
    leased.emplace_back();
    for (const LeasedTask& t : core->Lease(Req(3)).tasks) {
      leased.back().push_back(t.task_id + "/" + std::to_string(t.attempt) + "/" + t.prompt_id);
    }
  }
  for (size_t i = 1; i < cores.size(); ++i) {
    EXPECT_EQ(leased[0], leased[i]) << i;
    EXPECT_EQ(a.StatusJson(), cores[i]->StatusJson()) << i;
  }
}

// Pulls a frame writer's bytes `chunk` at a time, as the HTTP layer sends them.
std::string Drain(BatchFrameWriter& writer, size_t chunk) {
  std::string out;
  while (!writer.done()) writer.Next(chunk, &out);
  return out;
}

TEST_F(DataflowCoreTest, TakeBatchFrameGivesTheBytesOfTakeBatch) {
  // Twin cores, same history; one serves Batch values (encoded with EncodeBatch), the other
  // frames. Replay, prioritized selection, staleness drops and re-serves are all on the way.
  Dataset data = MakeDataset(30, 0.1);
  FakeClock clock_a, clock_b;
  auto a = DataflowCore::Create(RecoveryConfig(), &data, &clock_a, 42);
  auto b = DataflowCore::Create(RecoveryConfig(), &data, &clock_b, 42);
  ASSERT_TRUE(a.ok() && b.ok());
  Script(**a, clock_a, 0);
  Script(**b, clock_b, 0);
  int served = 0;
  for (int round = 0; round < 6; ++round) {
    if (round == 3) {  // Whatever is unacked is served again.
      clock_a.Advance(seconds(150));
      clock_b.Advance(seconds(150));
    }
    for (const char* policy : {"solver", "verifier"}) {
      auto batch = (*a)->TakeBatch(policy, 1);
      auto frame = (*b)->TakeBatchFrame(policy, 1);
      ASSERT_TRUE(batch.ok() && frame.ok());
      ASSERT_EQ(batch->has_value(), frame->has_value());
      if (!batch->has_value()) continue;
      ++served;
      ASSERT_EQ((*batch)->batch_id, (*frame)->batch_id);
      const std::string want = EncodeOrDie(**batch);
      EXPECT_EQ((*frame)->writer.size(), want.size());
      if (round % 2 == 1) {
        // Acked before its bytes are pulled (replay is on, so the ack would move the groups
        // into replay memory): the frame must not change.
        ASSERT_TRUE((*a)->Ack((*batch)->batch_id).ok());
        ASSERT_TRUE((*b)->Ack((*frame)->batch_id).ok());
      }
      EXPECT_TRUE(Drain((*frame)->writer, 1000) == want) << policy << " round " << round;
    }
    // Keep the buffers fed so that later rounds serve fresh groups and replays.
    const std::vector<LeasedTask> ta = (*a)->Lease(Req(2, "f")).tasks;
    const std::vector<LeasedTask> tb = (*b)->Lease(Req(2, "f")).tasks;
    ASSERT_EQ(ta.size(), tb.size());
    for (size_t t = 0; t < ta.size(); ++t) {
      ASSERT_EQ(ta[t].task_id, tb[t].task_id);
      std::vector<Sample> samples;
      for (int i = 0; i < 4; ++i) samples.push_back(Duo(i % 2, (i + 1) % 3 == 0 ? 1 : 0));
      for (Sample& s : samples) s.versions = {-1, round % 3, round % 3, 2};
      EXPECT_EQ((*a)->Submit(Group(ta[t], samples)).ok(), (*b)->Submit(Group(tb[t], samples)).ok());
    }
  }
  EXPECT_GE(served, 6);
  // Acks with a frame still pending copied the groups into replay memory instead of moving
  // them; the states are the same.
  EXPECT_TRUE((*a)->Snapshot() == (*b)->Snapshot());
}

TEST_F(DataflowCoreTest, AckedBatchKeepsItsPendingFrameWhileReplayMemoryMovesOn) {
  DataflowConfig c = BaseConfig();
  c.replay.replay_ratio = 0.5;  // Acks move fresh groups into replay memory...
  c.replay.capacity = 1;        // ...and a second ack evicts (frees) the first one's.
  auto core = Make(c);
  // Large arrays, so that freed ones go back to the system and reading them would crash.
  auto big = [](double reward, int32_t first_token) {
    Sample s = Single(reward);
    s.tokens.resize(1 << 16);
    for (size_t i = 0; i < s.tokens.size(); ++i)
      s.tokens[i] = first_token + static_cast<int32_t>(i);
    s.loss_mask.resize(s.tokens.size(), 1);
    s.behaviour_logprobs.resize(s.tokens.size(), -0.5f);
    s.versions.resize(s.tokens.size(), 0);
    return s;
  };
  for (int32_t g = 0; g < 2; ++g) {
    SubmitOk(*core, Group(LeaseOne(*core), {big(0, 1000 * g), big(1, 1000 * g + 1)}));
  }
  auto f1 = core->TakeBatchFrame("actor", 1);
  auto f2 = core->TakeBatchFrame("actor", 1);
  ASSERT_TRUE(f1.ok() && f1->has_value() && f2.ok() && f2->has_value());
  ASSERT_TRUE(core->Ack((*f1)->batch_id).ok());
  ASSERT_TRUE(core->Ack((*f2)->batch_id).ok());
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["replay_size"], 1);
  for (auto* f : {&f1, &f2}) {
    Result<Batch> b = DecodeBatch(Drain((**f)->writer, 256 << 10));
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_EQ(b->samples.size(), 2U);
    const int32_t first = f == &f1 ? 0 : 1000;
    EXPECT_EQ(b->samples[1].tokens.front(), first + 1);
    EXPECT_EQ(b->samples[1].tokens.back(), first + 1 + (1 << 16) - 1);
  }
}

TEST_F(DataflowCoreTest, ReservedBatchFrameDiffersFromTheFirstOnlyInItsServeCount) {
  auto core = Make(BaseConfig());
  for (int i = 0; i < 2; ++i) SubmitOk(*core, Mixed(LeaseOne(*core)));
  auto first = core->TakeBatchFrame("actor", 2);
  ASSERT_TRUE(first.ok() && first->has_value());
  const std::string first_bytes = Drain((*first)->writer, 64 << 10);
  EXPECT_FALSE(core->TakeBatchFrame("actor", 2)->has_value());
  clock_.Advance(seconds(100));
  const size_t records = records_.size();
  auto again = core->TakeBatchFrame("actor", 2);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->batch_id, (*first)->batch_id);
  EXPECT_EQ(records_.size(), records + 1) << "a re-serve is recorded before it is sent";
  const std::string again_bytes = Drain((*again)->writer, 3);
  Result<Batch> decoded = DecodeBatch(again_bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->stats["serves"], 2);
  decoded->stats["serves"] = 1;
  EXPECT_TRUE(EncodeOrDie(*decoded) == first_bytes);
}

TEST_F(DataflowCoreTest, RecoveryFromRecordsAndFromSnapshotPlusRecords) {
  Dataset data = MakeDataset(30, 0.1);
  auto original = Make(RecoveryConfig(), &data, 42);
  Script(*original, clock_, 0);
  const std::string mid = original->Snapshot();
  const size_t mid_records = records_.size();
  Script(*original, clock_, 1);
  ASSERT_GT(records_.size(), mid_records);
  std::set<uint32_t> types;
  for (const Record& r : records_) types.insert(r.type);
  EXPECT_EQ(types.size(), 9U) << "every record type exercised";
  nlohmann::json st = original->StatusJson();
  EXPECT_GT(st["policies"]["verifier"]["reserved_batches"].get<int>(), 0) << st.dump();
  EXPECT_GT(st["submits"]["duplicates"].get<int>(), 0);

  // From records only.
  auto from_log = DataflowCore::Create(RecoveryConfig(), &data, &clock_, 42).value();
  for (const Record& r : records_) ASSERT_TRUE(from_log->ApplyRecord(r).ok());
  // From the mid-way snapshot plus later records (a different seed: the state carries the rng).
  auto from_snapshot = DataflowCore::Create(RecoveryConfig(), &data, &clock_, 7).value();
  ASSERT_TRUE(from_snapshot->RestoreSnapshot(mid).ok());
  for (size_t i = mid_records; i < records_.size(); ++i) {
    ASSERT_TRUE(from_snapshot->ApplyRecord(records_[i]).ok()) << i;
  }
  EXPECT_EQ(original->StatusJson(), from_log->StatusJson());
  EXPECT_EQ(original->StatusJson(), from_snapshot->StatusJson());

  // A snapshot of a recovered core restores to the same state too.
  auto from_final = DataflowCore::Create(RecoveryConfig(), &data, &clock_, 9).value();
  ASSERT_TRUE(from_final->RestoreSnapshot(original->Snapshot()).ok());

  clock_.Advance(seconds(200));  // Unacked batches become due in all copies.
  records_.clear();
  ExpectSameState({original.get(), from_log.get(), from_snapshot.get(), from_final.get()});
}

TEST_F(DataflowCoreTest, RecoveryRejectsBadInput) {
  Dataset data = MakeDataset(30, 0.1);
  auto core = Make(RecoveryConfig(), &data);
  EXPECT_EQ(core->ApplyRecord({99, "x"}).code(), StatusCode::kCorruption);
  EXPECT_EQ(core->ApplyRecord({static_cast<uint32_t>(RecordType::kAck), "garbage"}).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(core->ApplyRecord({static_cast<uint32_t>(RecordType::kSubmit), "garbage"}).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(core->RestoreSnapshot("not cbor").code(), StatusCode::kCorruption);
  const std::string before = core->Snapshot();
  auto other = Make(RecoveryConfig(), &dataset_);  // A different dataset.
  EXPECT_EQ(other->RestoreSnapshot(before).code(), StatusCode::kConflict);
  EXPECT_TRUE(core->Snapshot() == before);
}

// ---- Threads. ----

TEST_F(DataflowCoreTest, ConcurrentLeaseSubmitTakeAck) {
  Dataset data = MakeDataset(400);
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.capacity_groups = 16;
  c.filters = {{"dynamic-sampling", nlohmann::json::object()}};
  auto core = Make(c, &data);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> submitted{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      const std::string worker = "w" + std::to_string(w);
      while (!stop.load()) {
        LeaseReply r = core->Lease(Req(2, worker));
        if (r.tasks.empty()) {
          std::atomic<bool> cancel{false};
          core->WaitForWork(cancel,
                            std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
          continue;
        }
        for (const LeasedTask& t : r.tasks) {
          (void)core->Renew(t.lease_id);
          auto s = core->Submit(Group(t, {Duo(1, 0), Duo(0, 1), Duo(1, 1)}));
          if (s.ok() && !s->duplicate) submitted.fetch_add(1);
          (void)core->Submit(Group(t, {Duo(1, 0)}));  // Duplicate.
        }
      }
    });
  }
  for (const char* policy : {"solver", "verifier"}) {
    threads.emplace_back([&, policy] {
      while (!stop.load()) {
        auto b = core->TakeBatch(policy, 2);
        if (b.ok() && b->has_value()) {
          (void)core->Ack((*b)->batch_id);
        } else {
          std::atomic<bool> cancel{false};
          core->WaitForBatch(policy, 2, cancel,
                             std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      (void)core->StatusJson();
      core->ExpireLeases();
      (void)core->Snapshot();
    }
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < until && submitted.load() < 150) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_GT(submitted.load(), 10);

  nlohmann::json st = core->StatusJson();
  EXPECT_EQ(st["submits"]["accepted"], submitted.load());
  for (const char* policy : {"solver", "verifier"}) {
    const nlohmann::json& p = st["policies"][policy];
    EXPECT_EQ(p["accepted_groups"].get<int64_t>(), p["buffered_groups"].get<int64_t>() +
                                                       p["unacked_groups"].get<int64_t>() +
                                                       p["acked_groups"].get<int64_t>())
        << p.dump();
    EXPECT_LE(p["buffered_groups"].get<int64_t>(), 16);
  }
  // The records, in sink order, rebuild the same state.
  auto rebuilt = DataflowCore::Create(c, &data, &clock_, 1).value();
  for (const Record& r : records_) ASSERT_TRUE(rebuilt->ApplyRecord(r).ok());
  EXPECT_EQ(rebuilt->StatusJson(), st);
}

TEST_F(DataflowCoreTest, WaitForWorkWakesOnAck) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 1;
  auto core = Make(c);
  SubmitOk(*core, Mixed(LeaseOne(*core)));
  std::atomic<bool> cancel{false};
  EXPECT_FALSE(core->WaitForWork(cancel, std::chrono::steady_clock::now()));
  auto b = core->TakeBatch("actor", 1);
  ASSERT_TRUE(b.ok() && b->has_value());
  std::thread acker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (void)core->Ack((*b)->batch_id);
  });
  EXPECT_TRUE(core->WaitForWork(cancel, std::chrono::steady_clock::now() + seconds(10)));
  acker.join();
  cancel.store(true);
  EXPECT_FALSE(
      core->WaitForBatch("actor", 1, cancel, std::chrono::steady_clock::now() + seconds(10)));
}

}  // namespace
}  // namespace sluice::dataflow
