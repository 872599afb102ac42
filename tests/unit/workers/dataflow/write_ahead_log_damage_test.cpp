// WriteAheadLog's recovery from damaged files: a torn or garbage tail of the last segment is
// cut off and appends continue; damage before valid records, in an earlier segment, or a missing
// segment is Corruption naming the file and offset; embedded frames are not taken for records.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/wire/frame.h"
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
using wal_test_support::PayloadFor;
using wal_test_support::ReadFile;
using wal_test_support::ReplayAll;
using wal_test_support::Replayed;
using wal_test_support::SegmentName;
using wal_test_support::TempDir;
using wal_test_support::WriteFile;

namespace fs = std::filesystem;

TEST(DataflowWalTest, TornTailAtEveryOffsetIsCutAndAppendsContinue) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.fsync = false;  // Only speed: the recovery logic is the same.
  const std::string segment = dir.str() + "/" + SegmentName(1);
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 4, 100);
  }
  const std::string four = ReadFile(segment);
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 1, 100);
  }
  const std::string five = ReadFile(segment);
  ASSERT_EQ(five.size(), four.size() + 100 + kWalRecordOverheadBytes);
  for (size_t cut = four.size(); cut < five.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    WriteFile(segment, std::string_view(five).substr(0, cut));
    {
      Replayed replayed;
      auto wal = OpenReplayed(options, &replayed);
      ExpectSequential(replayed.records, 1, 4);
      EXPECT_EQ(replayed.stats.truncated_bytes, cut - four.size());
      EXPECT_EQ(fs::file_size(segment), four.size());
      Result<uint64_t> lsn = wal->AppendDurable(5 % 7, PayloadFor(5, 30));
      ASSERT_TRUE(lsn.ok());
      EXPECT_EQ(*lsn, 5u);
    }
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    ExpectSequential(replayed.records, 1, 5);
    EXPECT_EQ(replayed.stats.truncated_bytes, 0u);
  }
}

TEST(DataflowWalTest, GarbageTailIsCut) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  const std::string segment = dir.str() + "/" + SegmentName(1);
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 3, 100);
  }
  const std::string good = ReadFile(segment);
  std::string random_junk(5000, '\0');
  std::mt19937_64 rng(3);
  for (char& c : random_junk) c = static_cast<char>(rng());
  // Zeros (a file extended but never written), random bytes, and a valid frame header claiming
  // more bytes than there are.
  const std::string tails[] = {std::string(4096, '\0'), random_junk,
                               good.substr(100 + kWalRecordOverheadBytes, 30)};
  for (const std::string& tail : tails) {
    WriteFile(segment, good + tail);
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    ExpectSequential(replayed.records, 1, 3);
    EXPECT_EQ(replayed.stats.truncated_bytes, tail.size());
    EXPECT_EQ(replayed.stats.truncated_file, segment);
  }
}

TEST(DataflowWalTest, EmbeddedFramesAreNotMistakenForRecords) {
  // The service's payloads are often wire frames themselves. A damaged last record whose payload
  // holds a valid (non-WAL) frame is still a torn tail.
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  const std::string segment = dir.str() + "/" + SegmentName(1);
  Result<std::string> inner = wire::EncodeFrame(0x0101, std::string(300, 'g'));
  ASSERT_TRUE(inner.ok());
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 2, 100);
    ASSERT_TRUE(wal->AppendDurable(2, *inner + std::string(200, 'p')).ok());
  }
  const size_t size = fs::file_size(segment);
  FlipByte(segment, size - 100);  // In the padding after the embedded frame.
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ExpectSequential(replayed.records, 1, 2);
  EXPECT_GT(replayed.stats.truncated_bytes, 0u);
}

TEST(DataflowWalTest, DamageBeforeValidRecordsIsCorruption) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  const std::string segment = dir.str() + "/" + SegmentName(1);
  constexpr size_t kFrame = 100 + kWalRecordOverheadBytes;
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 5, 100);
  }
  const std::string good = ReadFile(segment);
  // A payload byte of record 2, and the length field of record 3's header.
  const size_t offsets[] = {kFrame + 60, 2 * kFrame + 13};
  for (size_t offset : offsets) {
    SCOPED_TRACE(offset);
    WriteFile(segment, good);
    FlipByte(segment, offset);
    auto wal = MustOpen(options);
    Replayed replayed = ReplayAll(*wal);
    EXPECT_EQ(replayed.status.code(), StatusCode::kCorruption);
    const size_t record_start = offset / kFrame * kFrame;
    EXPECT_NE(replayed.status.message().find(segment), std::string::npos)
        << replayed.status.ToString();
    EXPECT_NE(replayed.status.message().find("offset " + std::to_string(record_start)),
              std::string::npos)
        << replayed.status.ToString();
    EXPECT_EQ(fs::file_size(segment), good.size());  // Nothing was cut.
  }
  // The same damage in the last record is a torn tail.
  WriteFile(segment, good);
  FlipByte(segment, 4 * kFrame + 60);
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ExpectSequential(replayed.records, 1, 4);
  EXPECT_EQ(replayed.stats.truncated_bytes, kFrame);
}

TEST(DataflowWalTest, DamageInAnEarlierSegmentOrAMissingSegmentIsCorruption) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.segment_bytes = 500;  // 136-byte frames: 4 per segment.
  {
    auto wal = OpenReplayed(options);
    AppendSequential(*wal, 12, 100);
  }
  ASSERT_EQ(FilesWithPrefix(dir.path(), "wal-").size(), 3u);
  const std::string first = dir.str() + "/" + SegmentName(1);
  const std::string middle = dir.str() + "/" + SegmentName(5);
  const std::string first_bytes = ReadFile(first);
  FlipByte(first, first_bytes.size() - 10);  // The last record of a segment that is not last.
  {
    auto wal = MustOpen(options);
    Replayed replayed = ReplayAll(*wal);
    EXPECT_EQ(replayed.status.code(), StatusCode::kCorruption);
    EXPECT_NE(replayed.status.message().find(first), std::string::npos);
  }
  WriteFile(first, first_bytes);
  fs::remove(middle);
  {
    auto wal = MustOpen(options);
    Replayed replayed = ReplayAll(*wal);
    EXPECT_EQ(replayed.status.code(), StatusCode::kCorruption) << replayed.status.ToString();
  }
  fs::remove(first);  // Records 1-8 gone and no snapshot.
  auto wal = MustOpen(options);
  Replayed replayed = ReplayAll(*wal);
  EXPECT_EQ(replayed.status.code(), StatusCode::kCorruption) << replayed.status.ToString();
}

}  // namespace
}  // namespace sluice::dataflow
