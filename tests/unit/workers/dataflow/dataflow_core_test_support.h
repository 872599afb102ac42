// What the DataflowCore tests (dataflow_core*_test.cpp) share: a base configuration, lease
// requests and submissions, the DataflowCoreTest fixture (a core on a FakeClock whose records
// are kept), and the scripted history the recovery and batch-frame tests replay.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow::core_test_support {

inline DataflowConfig BaseConfig() {
  DataflowConfig c;
  c.policies = {"actor"};
  c.group_size = 4;
  c.lease_duration = std::chrono::seconds(60);
  c.max_attempts = 2;
  c.capacity_groups = 8;
  c.groups_per_batch = 2;
  c.ack_timeout = std::chrono::seconds(100);
  c.staleness.max_staleness = 4;
  c.shuffle = false;
  c.sampling = {{"temperature", 1.0}, {"max_tokens", 64}};
  c.workflow = {{"type", "single-turn"}};
  return c;
}

// Rewards 0, 1, 0, 1 (non-zero variance) at `version`.
inline TrajectoryGroup Mixed(const LeasedTask& t, int64_t version = 0) {
  return fixtures::Group(t, {fixtures::Single(0, version), fixtures::Single(1, version),
                             fixtures::Single(0, version), fixtures::Single(1, version)});
}

inline LeaseRequest Req(int64_t capacity, std::string worker = "w1") {
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
  Dataset dataset_ = fixtures::MakeDataset(20);
  std::vector<Record> records_;
};

// Drives a core through a scripted sequence touching every record type.
inline void Script(DataflowCore& core, FakeClock& clock, int phase) {
  auto lease = [&](int64_t n, const std::string& w) { return core.Lease(Req(n, w)).tasks; };
  auto submit = [&](const LeasedTask& t, int64_t v) {
    std::vector<Sample> samples;
    for (int i = 0; i < 4; ++i) samples.push_back(fixtures::Duo(i % 2, (i + 1) % 3 == 0 ? 1 : 0));
    for (Sample& s : samples) s.versions = {-1, v, v, v};
    (void)core.Submit(fixtures::Group(t, samples));
  };
  if (phase == 0) {
    auto ts = lease(4, "a");
    submit(ts[0], 0);
    submit(ts[1], 0);
    submit(ts[1], 0);  // Duplicate.
    clock.Advance(std::chrono::seconds(30));
    (void)core.Renew(ts[2].lease_id);
    (void)core.Release(ts[3].lease_id, "oom");
    clock.Advance(std::chrono::seconds(65));  // ts[2] (renewed at 30) expires.
    EXPECT_EQ(core.ExpireLeases(), 1);
    auto more = lease(3, "b");
    for (const LeasedTask& t : more) submit(t, 1);
    submit(ts[2], 0);  // Late or duplicate.
    (void)core.AnnounceVersion("solver", {1, "u1", "d1", -1});
    auto b = core.TakeBatch("solver", 2);
    // Held by a checkpointing trainer (and still held at the end of the script).
    if (b.ok() && b->has_value()) (void)core.AckHeld((*b)->batch_id);
  } else {
    (void)core.TakeBatch("verifier", 2);  // Left unacked.
    auto ts = lease(3, "c");
    for (const LeasedTask& t : ts) submit(t, 1);
    (void)core.AnnounceVersion("solver", {2, "u2", "d2", 1});
    (void)core.AnnounceVersion("verifier", {4, "v4", "e4", -1});
    clock.Advance(std::chrono::seconds(150));
    auto reserved = core.TakeBatch("verifier", 2);  // Re-served.
    // Held, taken back by a trainer restarted before its checkpoint, trained and held again,
    // then released by its checkpoint.
    if (reserved.ok() && reserved->has_value()) {
      (void)core.AckHeld((*reserved)->batch_id);
      (void)core.ResumeHeld("verifier", 0);
      (void)core.AckHeld((*reserved)->batch_id);
      (void)core.ReleaseHeld("verifier", 2);
    }
    (void)core.TakeBatch("solver", 2);
    auto evals = lease(2, "d");
    for (const LeasedTask& t : evals) submit(t, 2);
    (void)core.TakeBatch("solver", 3);
    // A requested eval round at a version that is no multiple of every_versions.
    (void)core.AnnounceVersion("solver", {3, "u3", "d3", -1, true});
  }
}

inline DataflowConfig RecoveryConfig() {
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

inline std::string EncodeOrDie(const Batch& b) {
  std::string out;
  EXPECT_TRUE(EncodeBatch(b, &out).ok());
  return out;
}

}  // namespace sluice::dataflow::core_test_support
