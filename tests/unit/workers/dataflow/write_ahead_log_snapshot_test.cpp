// WriteAheadLog's snapshots: a snapshot drops the segments it covers and replay starts from
// it, a damaged newest snapshot falls back to an older one (or is Corruption), and a snapshot
// newer than the log's last records.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/unit/workers/dataflow/write_ahead_log_test_support.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {
namespace {

using wal_test_support::AppendSequential;
using wal_test_support::ExpectSequential;
using wal_test_support::FilesWithPrefix;
using wal_test_support::FlipByte;
using wal_test_support::MustOpen;
using wal_test_support::OpenReplayed;
using wal_test_support::ReadFile;
using wal_test_support::ReplayAll;
using wal_test_support::Replayed;
using wal_test_support::SegmentName;
using wal_test_support::TempDir;
using wal_test_support::WriteFile;

namespace fs = std::filesystem;

TEST(DataflowWalTest, SnapshotTruncatesTheLog) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.segment_bytes = 1000;
  constexpr uint64_t kFrame = 200 + kWalRecordOverheadBytes;
  {
    Replayed replayed;
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 40, 200);  // Segments start at 1, 6, ..., 36.
    EXPECT_EQ(wal->BytesSinceSnapshot(), 40 * kFrame);
    ASSERT_TRUE(wal->WriteSnapshot(22, "state@22").ok());
    // Segments 1-5 .. 16-20 hold only records <= 22; 21-25 is still needed.
    EXPECT_EQ(FilesWithPrefix(dir.path(), "wal-"),
              (std::vector<std::string>{SegmentName(21), SegmentName(26), SegmentName(31),
                                        SegmentName(36)}));
    EXPECT_EQ(FilesWithPrefix(dir.path(), "snapshot-"),
              std::vector<std::string>{"snapshot-00000000000000000022.bin"});
    EXPECT_GE(wal->BytesSinceSnapshot(), 18 * kFrame);
    EXPECT_LT(wal->BytesSinceSnapshot(), 18 * kFrame + 4096);
    EXPECT_EQ(wal->WriteSnapshot(21, "older").code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(wal->WriteSnapshot(41, "future").code(), StatusCode::kInvalidArgument);
    AppendSequential(*wal, 5, 200);
  }
  std::string big(9 << 20, '\0');  // Several chunks.
  std::mt19937_64 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  {
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    EXPECT_TRUE(replayed.has_snapshot);
    EXPECT_EQ(replayed.snapshot_lsn, 22u);
    EXPECT_EQ(replayed.snapshot, "state@22");
    ExpectSequential(replayed.records, 23, 23);
    EXPECT_EQ(replayed.stats.skipped_records, 2u);  // 21 and 22, in the first segment kept.
    EXPECT_EQ(replayed.stats.snapshot_lsn, 22u);
    EXPECT_EQ(wal->BytesSinceSnapshot(), 23 * kFrame);
    ASSERT_TRUE(wal->WriteSnapshot(45, big).ok());
    EXPECT_EQ(wal->BytesSinceSnapshot(), 0u);
    EXPECT_EQ(FilesWithPrefix(dir.path(), "snapshot-"),
              std::vector<std::string>{"snapshot-00000000000000000045.bin"});
    // Only the active segment is left.
    EXPECT_EQ(FilesWithPrefix(dir.path(), "wal-"), std::vector<std::string>{SegmentName(41)});
  }
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  EXPECT_EQ(replayed.snapshot_lsn, 45u);
  EXPECT_TRUE(replayed.snapshot == big);
  EXPECT_TRUE(replayed.records.empty());
  EXPECT_EQ(replayed.stats.skipped_records, 5u);
  AppendSequential(*wal, 1, 10);
  EXPECT_EQ(wal->LastLsn(), 46u);
}

TEST(DataflowWalTest, CorruptSnapshotFallsBackOrFails) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  const std::string snap5 = dir.str() + "/snapshot-00000000000000000005.bin";
  const std::string snap12 = dir.str() + "/snapshot-00000000000000000012.bin";
  std::string snap5_bytes;
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 10, 50);
    ASSERT_TRUE(wal->WriteSnapshot(5, "s5").ok());
    snap5_bytes = ReadFile(snap5);
    AppendSequential(*wal, 5, 50);
    ASSERT_TRUE(wal->WriteSnapshot(12, "s12").ok());
    EXPECT_FALSE(fs::exists(snap5));
  }
  WriteFile(snap5, snap5_bytes);       // As if kept.
  FlipByte(snap12, 30);                // Damage the newest.
  WriteFile(snap12 + ".tmp", "junk");  // An unfinished snapshot from a crash.
  {
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    EXPECT_EQ(replayed.snapshot_lsn, 5u);
    EXPECT_EQ(replayed.snapshot, "s5");
    ExpectSequential(replayed.records, 6, 10);
    EXPECT_EQ(replayed.stats.corrupt_snapshots, 1u);
    EXPECT_TRUE(fs::exists(snap12 + ".corrupt"));
    EXPECT_FALSE(fs::exists(snap12 + ".tmp"));
  }
  // No older snapshot to fall back to: Corruption naming the file.
  FlipByte(snap5, 30);
  auto wal = MustOpen(options);
  Replayed replayed = ReplayAll(*wal);
  EXPECT_EQ(replayed.status.code(), StatusCode::kCorruption);
  EXPECT_NE(replayed.status.message().find(snap5), std::string::npos) << replayed.status.ToString();
  EXPECT_EQ(wal->Append(1, "x").status().code(), StatusCode::kCorruption);
}

TEST(DataflowWalTest, SnapshotNewerThanTheLog) {
  // With fsync off, a crash can leave the snapshot ahead of the log's last records.
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  const std::string segment = dir.str() + "/" + SegmentName(1);
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 10, 50);
    ASSERT_TRUE(wal->WriteSnapshot(10, "s10").ok());
  }
  fs::resize_file(segment, 7 * (50 + kWalRecordOverheadBytes));
  {
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    EXPECT_EQ(replayed.snapshot_lsn, 10u);
    EXPECT_TRUE(replayed.records.empty());
    EXPECT_EQ(wal->LastLsn(), 10u);
    AppendSequential(*wal, 2, 50);
  }
  EXPECT_EQ(FilesWithPrefix(dir.path(), "wal-"), std::vector<std::string>{SegmentName(11)});
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  EXPECT_EQ(replayed.snapshot_lsn, 10u);
  ExpectSequential(replayed.records, 11, 2);
}

}  // namespace
}  // namespace sluice::dataflow
