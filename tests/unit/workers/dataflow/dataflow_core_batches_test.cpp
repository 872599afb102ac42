// DataflowCore's training batches: staleness (fifo, edf, down-weighting), replay, re-serving an
// unacknowledged batch, the version barrier, and TakeBatchFrame's bytes against TakeBatch's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_core_test_support.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {
namespace {

using core_test_support::BaseConfig;
using core_test_support::DataflowCoreTest;
using core_test_support::EncodeOrDie;
using core_test_support::Mixed;
using core_test_support::RecoveryConfig;
using core_test_support::Req;
using core_test_support::Script;
using fixtures::Duo;
using fixtures::Group;
using fixtures::MakeDataset;
using fixtures::Single;
using std::chrono::seconds;

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

}  // namespace
}  // namespace sluice::dataflow
