// DataflowCore at the end of the data: exhaustion, drained policies (by count, by staleness, at
// the version barrier), the long poll, and the state that survives a snapshot.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {
namespace dataflow_drain_test {

using fixtures::Duo;
using fixtures::Group;
using fixtures::MakeDataset;
using fixtures::Single;
using std::chrono::seconds;

DataflowConfig BaseConfig() {
  DataflowConfig c;
  c.policies = {"actor"};
  c.group_size = 4;
  c.lease_duration = seconds(60);
  c.capacity_groups = 8;
  c.groups_per_batch = 2;
  c.ack_timeout = seconds(100);
  c.staleness.max_staleness = 4;
  c.shuffle = false;
  c.epochs = 1;
  return c;
}

LeaseRequest Req(int64_t capacity) {
  LeaseRequest r;
  r.worker_id = "w1";
  r.capacity = capacity;
  return r;
}

class DataflowDrainTest : public ::testing::Test {
 protected:
  std::unique_ptr<DataflowCore> Make(const DataflowConfig& config) {
    auto core = DataflowCore::Create(config, &dataset_, &clock_, 1);
    EXPECT_TRUE(core.ok()) << core.status().ToString();
    return std::move(core).value();
  }

  // Leases every prompt (3) and returns the tasks.
  std::vector<LeasedTask> LeaseAll(DataflowCore& core) {
    LeaseReply r = core.Lease(Req(10));
    EXPECT_EQ(r.tasks.size(), 3U);
    EXPECT_TRUE(core.Lease(Req(1)).tasks.empty());
    return r.tasks;
  }

  void SubmitOk(DataflowCore& core, const TrajectoryGroup& g) {
    auto r = core.Submit(g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Takes a batch of `groups` of `policy` and acknowledges it.
  void TakeAndAck(DataflowCore& core, const std::string& policy, int64_t groups) {
    auto b = core.TakeBatch(policy, groups);
    ASSERT_TRUE(b.ok() && b->has_value()) << policy;
    ASSERT_TRUE(core.Ack((*b)->batch_id).ok());
  }

  bool Drained(const DataflowCore& core, const std::string& policy, int64_t groups) {
    Result<PolicyDrain> d = core.Drain(policy, groups);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() && d->drained;
  }

  FakeClock clock_;
  Dataset dataset_ = MakeDataset(3);
};

TEST_F(DataflowDrainTest, DrainedOnceTheRestCannotFillABatch) {
  auto core = Make(BaseConfig());
  std::vector<LeasedTask> tasks = LeaseAll(*core);
  SubmitOk(*core, Group(tasks[0], {Single(0), Single(1)}));
  SubmitOk(*core, Group(tasks[1], {Single(0), Single(1)}));
  EXPECT_FALSE(core->StatusJson()["exhausted"].get<bool>());  // tasks[2] is leased.
  EXPECT_FALSE(Drained(*core, "actor", 0));
  ASSERT_TRUE(core->Release(tasks[2].lease_id).ok());
  EXPECT_FALSE(core->StatusJson()["exhausted"].get<bool>());  // Re-queued: still to come.
  LeasedTask again = core->Lease(Req(1)).tasks.at(0);
  SubmitOk(*core, Group(again, {Single(0), Single(1)}));

  auto b = core->TakeBatch("actor", 0);
  ASSERT_TRUE(b.ok() && b->has_value());
  nlohmann::json st = core->StatusJson();
  EXPECT_TRUE(st["exhausted"].get<bool>());
  EXPECT_FALSE(st["policies"]["actor"]["drained"].get<bool>());  // The batch may come back.
  ASSERT_TRUE(core->Ack((*b)->batch_id).ok());
  st = core->StatusJson();
  EXPECT_TRUE(st["policies"]["actor"]["drained"].get<bool>());
  EXPECT_EQ(st["policies"]["actor"]["usable_groups"], 1);
  Result<PolicyDrain> d = core->Drain("actor", 0);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->drained);
  EXPECT_EQ(d->reason, "the 1 buffered group of policy actor cannot fill a batch of 2");
  // Per batch size: one group still fills a batch of one.
  EXPECT_FALSE(Drained(*core, "actor", 1));
  TakeAndAck(*core, "actor", 1);
  EXPECT_TRUE(Drained(*core, "actor", 1));
  EXPECT_EQ(core->Drain("nobody", 0).status().code(), StatusCode::kNotFound);
}

TEST_F(DataflowDrainTest, StaleGroupsCannotFillABatch) {
  DataflowConfig c = BaseConfig();
  c.staleness.max_staleness = 0;
  c.groups_per_batch = 3;  // So that admission's staleness budget leases all three prompts.
  auto core = Make(c);
  for (const LeasedTask& t : LeaseAll(*core)) SubmitOk(*core, Group(t, {Single(0), Single(1)}));
  TakeAndAck(*core, "actor", 2);
  EXPECT_FALSE(Drained(*core, "actor", 1));  // One group at version 0: fresh at version 0.
  ASSERT_TRUE(core->AnnounceVersion("actor", {1, "", "", -1}).ok());
  Result<PolicyDrain> d = core->Drain("actor", 1);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->drained);
  EXPECT_EQ(d->reason,
            "the 0 buffered groups (of 1; the others are stale) of policy actor cannot fill a "
            "batch of 1");
  EXPECT_FALSE(core->TakeBatch("actor", 1)->has_value());
}

// Solver trains on batches of 1, verifier on batches of 2, at the version barrier.
TEST_F(DataflowDrainTest, VersionBarrierDrainsThePolicyWaitingForADrainedOne) {
  DataflowConfig c = BaseConfig();
  c.policies = {"solver", "verifier"};
  c.version_barrier = true;
  auto core = Make(c);
  for (const LeasedTask& t : LeaseAll(*core)) SubmitOk(*core, Group(t, {Duo(1, 0), Duo(0, 1)}));
  TakeAndAck(*core, "verifier", 2);  // Verifier keeps 1 group: drained, about to announce 1.
  EXPECT_TRUE(Drained(*core, "verifier", 2));
  TakeAndAck(*core, "solver", 1);
  ASSERT_TRUE(core->AnnounceVersion("solver", {1, "", "", -1}).ok());
  // Solver at 1 waits for verifier's announcement of the version it trained: not drained.
  EXPECT_FALSE(Drained(*core, "solver", 1));
  // The announcement still due survives a snapshot.
  auto restored = DataflowCore::Create(c, &dataset_, &clock_, 7).value();
  ASSERT_TRUE(restored->RestoreSnapshot(core->Snapshot()).ok());
  EXPECT_FALSE(Drained(*restored, "solver", 1));
  EXPECT_EQ(restored->StatusJson(), core->StatusJson());

  ASSERT_TRUE(core->AnnounceVersion("verifier", {1, "", "", -1}).ok());
  EXPECT_FALSE(Drained(*core, "solver", 1));
  TakeAndAck(*core, "solver", 1);  // At version 1, which verifier reached.
  ASSERT_TRUE(core->AnnounceVersion("solver", {2, "", "", -1}).ok());
  // Solver at 2 has a group but waits for verifier, which can never reach 2.
  EXPECT_FALSE(core->TakeBatch("solver", 1)->has_value());
  Result<PolicyDrain> d = core->Drain("solver", 1);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->drained);
  EXPECT_EQ(d->reason,
            "policy solver waits at the version barrier (version 2) for policy verifier, which "
            "can no longer train (version 1)");
}

TEST_F(DataflowDrainTest, WaitForBatchReturnsOnceDrained) {
  auto core = Make(BaseConfig());
  for (const LeasedTask& t : LeaseAll(*core)) SubmitOk(*core, Group(t, {Single(0), Single(1)}));
  auto b = core->TakeBatch("actor", 2);
  ASSERT_TRUE(b.ok() && b->has_value());
  std::atomic<bool> cancel{false};
  EXPECT_FALSE(core->WaitForBatch("actor", 2, cancel, std::chrono::steady_clock::now()));
  std::thread acker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (void)core->Ack((*b)->batch_id);
  });
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(core->WaitForBatch("actor", 2, cancel, began + seconds(10)));
  acker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(5));
  EXPECT_TRUE(Drained(*core, "actor", 2));
  EXPECT_FALSE(core->TakeBatch("actor", 2)->has_value());
}

}  // namespace dataflow_drain_test
}  // namespace sluice::dataflow
