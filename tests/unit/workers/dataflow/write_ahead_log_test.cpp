// WriteAheadLog: records round-trip across a reopen, lifecycle errors, a failing replay
// callback, group commit (shared fsyncs, the commit delay, metrics) and segments rolling.
#include "workers/dataflow/write_ahead_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/metrics/registry.h"
#include "common/status.h"
#include "tests/unit/workers/dataflow/write_ahead_log_test_support.h"

namespace sluice::dataflow {
namespace {

using wal_test_support::AppendSequential;
using wal_test_support::ExpectSequential;
using wal_test_support::FilesWithPrefix;
using wal_test_support::IdOf;
using wal_test_support::MustOpen;
using wal_test_support::OpenReplayed;
using wal_test_support::PayloadFor;
using wal_test_support::ReplayAll;
using wal_test_support::Replayed;
using wal_test_support::SegmentName;
using wal_test_support::TempDir;

namespace fs = std::filesystem;

double MetricValue(const metrics::Registry& registry, std::string_view name) {
  for (const metrics::FamilySnapshot& family : registry.Collect()) {
    if (family.name == name && !family.children.empty()) return family.children[0].value;
  }
  return -1;
}

uint64_t HistogramCount(const metrics::Registry& registry, std::string_view name) {
  for (const metrics::FamilySnapshot& family : registry.Collect()) {
    if (family.name == name && !family.children.empty()) {
      return family.children[0].histogram.count;
    }
  }
  return 0;
}

TEST(DataflowWalTest, RoundTripAcrossReopen) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.str() + "/nested/wal";  // Created on Open.
  {
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    EXPECT_FALSE(replayed.has_snapshot);
    EXPECT_TRUE(replayed.records.empty());
    EXPECT_EQ(replayed.stats.last_lsn, 0u);
    const size_t sizes[] = {0, 1, 17, 200, 70000, 3};
    for (uint64_t lsn = 1; lsn <= 12; ++lsn) {
      const std::string payload = lsn == 1 ? "" : PayloadFor(lsn, sizes[lsn % 6]);
      Result<uint64_t> got = wal->Append(static_cast<uint32_t>(lsn * 1000003), payload);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, lsn);
    }
    EXPECT_EQ(wal->LastLsn(), 12u);
    ASSERT_TRUE(wal->WaitDurable(12).ok());
    EXPECT_EQ(wal->DurableLsn(), 12u);
    ASSERT_TRUE(wal->Close().ok());
  }
  {
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    ASSERT_EQ(replayed.records.size(), 12u);
    for (uint64_t lsn = 1; lsn <= 12; ++lsn) {
      const WalRecord& r = replayed.records[lsn - 1];
      EXPECT_EQ(r.lsn, lsn);
      EXPECT_EQ(r.type, static_cast<uint32_t>(lsn * 1000003));
      if (lsn == 1) {
        EXPECT_EQ(r.payload, "");
      } else {
        EXPECT_EQ(IdOf(r.payload), lsn);
      }
    }
    EXPECT_EQ(replayed.stats.records, 12u);
    EXPECT_EQ(replayed.stats.last_lsn, 12u);
    EXPECT_EQ(replayed.stats.truncated_bytes, 0u);
    EXPECT_EQ(wal->LastLsn(), 12u);
    EXPECT_EQ(wal->DurableLsn(), 12u);
    Result<uint64_t> next = wal->AppendDurable(5, "after reopen");
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(*next, 13u);
    // Destroyed without Close: the destructor closes.
  }
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ASSERT_EQ(replayed.records.size(), 13u);
  EXPECT_EQ(replayed.records[12].payload, "after reopen");
  EXPECT_EQ(replayed.records[12].type, 5u);
}

TEST(DataflowWalTest, LifecycleErrors) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  EXPECT_EQ(WriteAheadLog::Open(WalOptions{}, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  WalOptions zero_segment = options;
  zero_segment.segment_bytes = 0;
  EXPECT_EQ(WriteAheadLog::Open(zero_segment, nullptr).status().code(),
            StatusCode::kInvalidArgument);

  auto wal = MustOpen(options);
  // One writer per directory.
  EXPECT_EQ(WriteAheadLog::Open(options, nullptr).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(wal->Append(1, "x").status().code(), StatusCode::kInvalidArgument);  // No Replay.
  EXPECT_EQ(wal->WriteSnapshot(0, "s").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ReplayAll(*wal).status.ok());
  EXPECT_EQ(ReplayAll(*wal).status.code(), StatusCode::kInvalidArgument);  // Only once.
  ASSERT_TRUE(wal->Append(1, "x").ok());
  EXPECT_TRUE(wal->WaitDurable(0).ok());
  EXPECT_EQ(wal->WaitDurable(2).code(), StatusCode::kInvalidArgument);  // Never appended.
  EXPECT_EQ(wal->WriteSnapshot(2, "s").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(wal->Close().ok());
  EXPECT_TRUE(wal->Close().ok());  // Idempotent.
  EXPECT_EQ(wal->DurableLsn(), 1u);
  EXPECT_TRUE(wal->WaitDurable(1).ok());
  EXPECT_EQ(wal->Append(1, "y").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(wal->WriteSnapshot(1, "s").code(), StatusCode::kUnavailable);
  // Close released the directory.
  Replayed replayed;
  auto again = OpenReplayed(options, &replayed);
  EXPECT_EQ(replayed.records.size(), 1u);
}

TEST(DataflowWalTest, ReplayCallbackErrorStopsAndFailsTheLog) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 5, 10);
  }
  auto wal = MustOpen(options);
  int seen = 0;
  Result<ReplayStats> stats =
      wal->Replay([](uint64_t, std::string_view) { return Status::Ok(); },
                  [&](const WalRecord& r) {
                    ++seen;
                    return r.lsn == 3 ? Status::Unprocessable("bad") : Status::Ok();
                  });
  EXPECT_EQ(stats.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(wal->Append(1, "x").status().code(), StatusCode::kUnprocessable);
}

TEST(DataflowWalTest, GroupCommitSharesFsyncs) {
  TempDir dir;
  metrics::Registry registry;
  WalOptions options;
  options.dir = dir.path();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  {
    auto wal = OpenReplayed(options, nullptr, &registry);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          Result<uint64_t> lsn = wal->AppendDurable(t, PayloadFor(t * 1000 + i, 200));
          if (!lsn.ok() || wal->DurableLsn() < *lsn) failures.fetch_add(1);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
    const WalStats stats = wal->Stats();
    EXPECT_EQ(stats.records, uint64_t{kThreads * kPerThread});
    EXPECT_GT(stats.fsyncs, 0u);
    EXPECT_LT(stats.fsyncs * 2, stats.records) << "fsyncs are not shared";
    EXPECT_EQ(MetricValue(registry, "sluice_dataflow_wal_records_total"),
              double{kThreads * kPerThread});
    EXPECT_EQ(MetricValue(registry, "sluice_dataflow_wal_fsyncs_total"),
              static_cast<double>(stats.fsyncs));
    EXPECT_EQ(MetricValue(registry, "sluice_dataflow_wal_bytes_total"),
              static_cast<double>(stats.bytes));
    EXPECT_EQ(stats.bytes, uint64_t{kThreads * kPerThread} * (200 + kWalRecordOverheadBytes));
    EXPECT_EQ(HistogramCount(registry, "sluice_dataflow_wal_fsync_seconds"), stats.fsyncs);
  }
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ASSERT_EQ(replayed.records.size(), size_t{kThreads * kPerThread});
  std::map<uint32_t, int> next_per_thread;  // Each thread's records in its own order.
  for (size_t i = 0; i < replayed.records.size(); ++i) {
    const WalRecord& r = replayed.records[i];
    EXPECT_EQ(r.lsn, i + 1);
    EXPECT_EQ(IdOf(r.payload), r.type * 1000 + next_per_thread[r.type]++);
  }
}

TEST(DataflowWalTest, GroupCommitDelayGathersMore) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.group_commit_delay = std::chrono::milliseconds(2);
  auto wal = OpenReplayed(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) ASSERT_TRUE(wal->AppendDurable(1, "payload").ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(wal->Stats().fsyncs * 4, wal->Stats().records);
}

TEST(DataflowWalTest, SegmentsRollAndReplayInOrder) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.segment_bytes = 1000;  // 200-byte payloads: 236-byte frames, 5 per segment.
  constexpr size_t kFrame = 200 + kWalRecordOverheadBytes;
  {
    auto wal = OpenReplayed(options);
    // 23 records in one batch (rolled mid-batch), then 12 one by one.
    for (uint64_t lsn = 1; lsn <= 23; ++lsn) {
      ASSERT_TRUE(wal->Append(lsn % 7, PayloadFor(lsn, 200)).ok());
    }
    ASSERT_TRUE(wal->WaitDurable(23).ok());
    AppendSequential(*wal, 12, 200);
  }
  std::vector<std::string> expected;
  for (uint64_t first = 1; first <= 35; first += 5) expected.push_back(SegmentName(first));
  EXPECT_EQ(FilesWithPrefix(dir.path(), "wal-"), expected);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(fs::file_size(dir.str() + "/" + expected[i]), 5 * kFrame) << expected[i];
  }
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ExpectSequential(replayed.records, 1, 35);
  EXPECT_EQ(replayed.stats.segments, 7u);
  EXPECT_EQ(replayed.stats.record_bytes, 35 * kFrame);
  // The full last segment is rolled on the next write.
  AppendSequential(*wal, 1, 200);
  EXPECT_EQ(FilesWithPrefix(dir.path(), "wal-").back(), SegmentName(36));
}

}  // namespace
}  // namespace sluice::dataflow
