// DataflowCore's recovery: re-applying its records and restoring its snapshots reproduces the
// original core (the next batches and leases included), even when the limits changed; bad
// records and snapshots are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/unit/workers/dataflow/dataflow_core_test_support.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {
namespace {

using core_test_support::BaseConfig;
using core_test_support::DataflowCoreTest;
using core_test_support::EncodeOrDie;
using core_test_support::RecoveryConfig;
using core_test_support::Req;
using core_test_support::Script;
using fixtures::MakeDataset;
using std::chrono::seconds;

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
  EXPECT_EQ(types.size(), 11U) << "every record type exercised";
  EXPECT_EQ(original->StatusJson()["policies"]["solver"]["held_batches"], 1);
  EXPECT_EQ(original->StatusJson()["policies"]["verifier"]["held_seq"], 2);
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

}  // namespace
}  // namespace sluice::dataflow
