// DataflowCore's held acknowledgements (dataflow_core.h, "Held acknowledgements"): batches a
// checkpointing trainer trained, kept until its checkpoint releases them and taken back when it
// restarts from an older checkpoint, so every batch is trained exactly once in the weights that
// survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_core_test_support.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {
namespace {

using core_test_support::BaseConfig;
using core_test_support::DataflowCoreTest;
using core_test_support::Mixed;
using std::chrono::seconds;

class DataflowHeldTest : public DataflowCoreTest {
 protected:
  // Submits two groups and takes them as one batch; its id.
  std::string TakeOne(DataflowCore& core) {
    for (int i = 0; i < 2; ++i) SubmitOk(core, Mixed(LeaseOne(core)));
    auto b = core.TakeBatch("actor", 2);
    EXPECT_TRUE(b.ok() && b->has_value());
    return b.ok() && b->has_value() ? (*b)->batch_id : "";
  }
  nlohmann::json Actor(const DataflowCore& core) { return core.StatusJson()["policies"]["actor"]; }
};

TEST_F(DataflowHeldTest, HeldBatchesCountAsAcknowledgedUntilReleased) {
  DataflowConfig c = BaseConfig();
  c.replay.replay_ratio = 0.5;
  auto core = Make(c);
  const std::string first = TakeOne(*core);
  const std::string second = TakeOne(*core);
  EXPECT_EQ(core->AckHeld(first).value(), 1);
  EXPECT_EQ(core->AckHeld(second).value(), 2);
  EXPECT_EQ(core->AckHeld(first).value(), 1) << "a retried ack gets the same number";
  nlohmann::json a = Actor(*core);
  EXPECT_EQ(a["acked_batches"], 2);
  EXPECT_EQ(a["acked_groups"], 4);
  EXPECT_EQ(a["unacked_batches"], 0);
  EXPECT_EQ(a["held_batches"], 2);
  EXPECT_EQ(a["held_seq"], 2);
  EXPECT_EQ(a["replay_size"], 4);  // Consumed: replay memory has them.
  // Not served again, however long the trainer takes to checkpoint.
  clock_.Advance(seconds(1000));
  EXPECT_FALSE(core->TakeBatch("actor", 2)->has_value());

  EXPECT_EQ(core->ReleaseHeld("actor", 1).value(), 1);
  EXPECT_EQ(core->ReleaseHeld("actor", 1).value(), 0) << "released already";
  EXPECT_EQ(Actor(*core)["held_batches"], 1);
  EXPECT_EQ(core->AckHeld(first).value(), 0) << "acknowledged for good";
  // A final ack of a held batch releases it.
  ASSERT_TRUE(core->Ack(second).ok());
  EXPECT_EQ(Actor(*core)["held_batches"], 0);
  EXPECT_EQ(Actor(*core)["acked_batches"], 2);

  EXPECT_EQ(core->AckHeld("batch-99").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(core->ReleaseHeld("critic", 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(core->ReleaseHeld("actor", -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(core->ResumeHeld("critic", 0).status().code(), StatusCode::kNotFound);
}

TEST_F(DataflowHeldTest, AResumedTrainerGetsBackEverythingAfterItsCheckpoint) {
  DataflowConfig c = BaseConfig();
  c.replay.replay_ratio = 0.5;
  c.capacity_groups = 16;
  auto core = Make(c);
  // Batch 1 is in the checkpoint (hold 1); 2 and 3 were trained after it; 4 was in the dead
  // trainer's hands, unacknowledged.
  std::vector<std::string> ids;
  std::vector<std::vector<Sample>> served;
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 2; ++k) SubmitOk(*core, Mixed(LeaseOne(*core)));
    auto b = core->TakeBatch("actor", 2);
    ASSERT_TRUE(b.ok() && b->has_value());
    ids.push_back((*b)->batch_id);
    served.push_back((*b)->samples);
    if (i < 3) {
      ASSERT_EQ(core->AckHeld(ids.back()).value(), i + 1);
    }
  }
  const nlohmann::json before = Actor(*core);
  EXPECT_EQ(before["acked_batches"], 3);
  const int64_t replay_before = before["replay_size"].get<int64_t>();

  const size_t records = records_.size();
  EXPECT_EQ(core->ResumeHeld("actor", 1).value(), 2);
  ASSERT_EQ(records_.size(), records + 1);
  EXPECT_EQ(records_.back().type, static_cast<uint32_t>(RecordType::kResumeHeld));
  const nlohmann::json after = Actor(*core);
  EXPECT_EQ(after["held_batches"], 0);
  EXPECT_EQ(after["acked_batches"], 1);
  EXPECT_EQ(after["acked_groups"], 2);
  EXPECT_EQ(after["unacked_batches"], 3);
  EXPECT_LT(after["replay_size"].get<int64_t>(), replay_before);

  // Served again at once, unchanged and with the same ids, in the order they were trained: the
  // taken-back ones, then the one in hand; never the checkpointed one.
  std::vector<std::string> again;
  for (int i = 0; i < 3; ++i) {
    auto b = core->TakeBatch("actor", 2);
    ASSERT_TRUE(b.ok() && b->has_value()) << i;
    again.push_back((*b)->batch_id);
    const size_t k =
        static_cast<size_t>(std::find(ids.begin(), ids.end(), again.back()) - ids.begin());
    ASSERT_LT(k, ids.size());
    ASSERT_EQ((*b)->samples.size(), served[k].size());
    for (size_t s = 0; s < served[k].size(); ++s) {
      EXPECT_EQ((*b)->samples[s].tokens, served[k][s].tokens);
    }
    EXPECT_GE((*b)->stats["serves"].get<int64_t>(), 2);
  }
  EXPECT_EQ(again, (std::vector<std::string>{ids[1], ids[2], ids[3]}));
  // Trained again, they take new hold numbers.
  EXPECT_EQ(core->AckHeld(ids[1]).value(), 4);
  EXPECT_EQ(core->AckHeld(ids[2]).value(), 5);
  EXPECT_EQ(Actor(*core)["acked_batches"], 3);
  // A resume with nothing held after the checkpoint changes nothing (and records nothing).
  ASSERT_TRUE(core->Ack(ids[3]).ok());
  EXPECT_EQ(core->ResumeHeld("actor", 5).value(), 0);
  const size_t quiet = records_.size();
  EXPECT_EQ(core->ResumeHeld("actor", 5).value(), 0);
  EXPECT_EQ(records_.size(), quiet);
}

TEST_F(DataflowHeldTest, HeldBatchesSurviveRecoveryFromRecordsAndSnapshots) {
  DataflowConfig c = BaseConfig();
  c.replay.replay_ratio = 0.5;
  c.capacity_groups = 16;
  auto original = Make(c);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(TakeOne(*original));
    ASSERT_EQ(original->AckHeld(ids.back()).value(), i + 1);
  }
  const std::string mid = original->Snapshot();
  const size_t mid_records = records_.size();
  ASSERT_EQ(original->ReleaseHeld("actor", 1).value(), 1);
  ASSERT_EQ(original->ResumeHeld("actor", 2).value(), 1);

  auto from_log = DataflowCore::Create(c, &dataset_, &clock_, 1).value();
  for (const Record& r : records_) ASSERT_TRUE(from_log->ApplyRecord(r).ok());
  auto from_snapshot = DataflowCore::Create(c, &dataset_, &clock_, 1).value();
  ASSERT_TRUE(from_snapshot->RestoreSnapshot(mid).ok());
  EXPECT_EQ(from_snapshot->StatusJson()["policies"]["actor"]["held_batches"], 3);
  for (size_t i = mid_records; i < records_.size(); ++i) {
    ASSERT_TRUE(from_snapshot->ApplyRecord(records_[i]).ok()) << i;
  }
  for (DataflowCore* core : {from_log.get(), from_snapshot.get()}) {
    EXPECT_EQ(core->StatusJson(), original->StatusJson());
    EXPECT_TRUE(core->Snapshot() == original->Snapshot());
    auto b = core->TakeBatch("actor", 2);
    ASSERT_TRUE(b.ok() && b->has_value());
    EXPECT_EQ((*b)->batch_id, ids[2]);
  }
}

}  // namespace
}  // namespace sluice::dataflow
