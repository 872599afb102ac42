// DataflowCore's evaluation rounds: every N versions and scored as avg@k and pass@k, a fixed
// subset of rows, the train split, the round at start, the `evaluate` flag of an announcement,
// rounds under the version barrier, and the flag across recovery.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
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
using core_test_support::Req;
using fixtures::Group;
using fixtures::MakeDataset;
using fixtures::Single;

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

}  // namespace
}  // namespace sluice::dataflow
