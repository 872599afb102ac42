// DataflowCore's leases: the fields of a leased task, renewal, release, expiry and max attempts,
// admission control (capacity and the staleness budget) and its status signals, the versions a
// lease reply carries, and the curator skipping prompts.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_core_test_support.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {
namespace {

using core_test_support::BaseConfig;
using core_test_support::DataflowCoreTest;
using core_test_support::Mixed;
using core_test_support::Req;
using fixtures::Group;
using fixtures::MakeDataset;
using fixtures::Single;
using std::chrono::seconds;

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

// The synchronous baseline (maxStaleness 0; docs/dataflow.md): rollouts and training alternate.
// The pool gets exactly one batch of work against the newest weights, nothing while that batch
// waits or trains, and the next batch only once it holds the version the trainer made.
TEST_F(DataflowCoreTest, MaxStalenessZeroAlternatesRolloutsAndTraining) {
  DataflowConfig c = BaseConfig();
  c.capacity_groups = 100;
  c.groups_per_batch = 3;
  c.staleness.max_staleness = 0;
  auto core = Make(c);
  LeaseRequest worker = Req(10);
  for (int64_t version = 0; version < 3; ++version) {
    SCOPED_TRACE(version);
    worker.hosted_policies = {{"actor", version}};
    LeaseReply r = core->Lease(worker);
    ASSERT_EQ(r.tasks.size(), 3U) << "one batch of work";
    EXPECT_TRUE(r.backpressure);
    for (const LeasedTask& t : r.tasks) SubmitOk(*core, Mixed(t, version));
    EXPECT_TRUE(core->Lease(worker).tasks.empty()) << "the batch waits for the trainer";
    auto batch = core->TakeBatch("actor", 3);
    ASSERT_TRUE(batch.ok() && batch->has_value());
    EXPECT_EQ((*batch)->samples.size(), 3U * 4U);  // Every group of the batch, none stale.
    EXPECT_TRUE(core->Lease(worker).tasks.empty()) << "the pool waits while the trainer steps";
    ASSERT_TRUE(core->Ack((*batch)->batch_id).ok());
    EXPECT_TRUE(core->Lease(worker).tasks.empty()) << "trained, the new version not out yet";
    ASSERT_TRUE(
        core->AnnounceVersion("actor", {version + 1, "u", "d" + std::to_string(version), -1}).ok());
    EXPECT_TRUE(core->Lease(worker).tasks.empty()) << "a worker on the old weights gets nothing";
  }
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["stale_dropped_groups"], 0);
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
  // The same image from a restarted trainer: the version moves to its new url.
  VersionInfo moved = v1;
  moved.url = "http://trainer-0b:8080/v1/weights/1";
  EXPECT_TRUE(core->AnnounceVersion("actor", moved).ok());
  EXPECT_EQ(core->Lease(Req(1)).versions[0].version, moved);
  // Another image under the same number is refused, naming both digests.
  VersionInfo other_image = moved;
  other_image.digest = "sha256:cc";
  const Status refused = core->AnnounceVersion("actor", other_image);
  EXPECT_EQ(refused.code(), StatusCode::kConflict);
  EXPECT_NE(refused.message().find("already announced with digest \"sha256:aa\""),
            std::string::npos)
      << refused.ToString();
  EXPECT_NE(refused.message().find("announce a version above 1"), std::string::npos)
      << refused.ToString();
  VersionInfo undigested = moved;
  undigested.digest = "";
  undigested.url = "elsewhere";
  EXPECT_EQ(core->AnnounceVersion("actor", undigested).code(), StatusCode::kConflict);
  EXPECT_EQ(core->Lease(Req(1)).versions[0].version, moved);
  EXPECT_EQ(core->AnnounceVersion("actor", {0, "", "", -1}).code(), StatusCode::kConflict);
  EXPECT_EQ(core->AnnounceVersion("critic", {2, "", "", -1}).code(), StatusCode::kNotFound);
  VersionInfo v2{2, "http://trainer-0:8080/v1/weights/2?base=1", "sha256:bb", 1};
  ASSERT_TRUE(core->AnnounceVersion("actor", v2).ok());
  EXPECT_EQ(core->Lease(Req(1)).versions[0].version, v2);
  EXPECT_EQ(core->CurrentVersion("actor"), 2);
  EXPECT_EQ(core->StatusJson()["policies"]["actor"]["version"], 2);
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

}  // namespace
}  // namespace sluice::dataflow
