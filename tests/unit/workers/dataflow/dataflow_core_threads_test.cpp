// DataflowCore under concurrent callers: workers leasing and submitting, trainers taking and
// acknowledging, a status and snapshot reader; and the long polls waking on state changes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

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
using fixtures::Duo;
using fixtures::Group;
using fixtures::MakeDataset;
using std::chrono::seconds;

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
