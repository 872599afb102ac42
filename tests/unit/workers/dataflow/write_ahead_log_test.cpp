#include "workers/dataflow/write_ahead_log.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/registry.h"
#include "common/wire/frame.h"

namespace sluice::dataflow {
namespace {

namespace fs = std::filesystem;

// A directory under /tmp unique to this process and test, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/sluice_wal_test_" + std::to_string(getpid()) + "_XXXXXX";
    SLUICE_CHECK(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Deterministic contents for a record identified by `id`, `size` bytes (at least the id).
std::string PayloadFor(uint64_t id, size_t size) {
  std::string p = "id=" + std::to_string(id) + ";";
  p.reserve(std::max(size, p.size()));
  while (p.size() < size) p.push_back(static_cast<char>('a' + (id + p.size()) % 26));
  return p;
}

// The id PayloadFor was given, or ~0 when the payload is not one of its outputs.
uint64_t IdOf(const std::string& payload) {
  const size_t semi = payload.find(';');
  if (!payload.starts_with("id=") || semi == std::string::npos) return ~uint64_t{0};
  uint64_t id = 0;
  const auto [end, ec] = std::from_chars(payload.data() + 3, payload.data() + semi, id);
  if (ec != std::errc() || end != payload.data() + semi) return ~uint64_t{0};
  return PayloadFor(id, payload.size()) == payload ? id : ~uint64_t{0};
}

struct Replayed {
  Status status;
  ReplayStats stats;
  bool has_snapshot = false;
  uint64_t snapshot_lsn = 0;
  std::string snapshot;
  std::vector<WalRecord> records;
};

Replayed ReplayAll(WriteAheadLog& wal) {
  Replayed out;
  Result<ReplayStats> stats = wal.Replay(
      [&](uint64_t lsn, std::string_view snapshot) {
        EXPECT_FALSE(out.has_snapshot) << "two snapshots";
        EXPECT_TRUE(out.records.empty()) << "snapshot after records";
        out.has_snapshot = true;
        out.snapshot_lsn = lsn;
        out.snapshot = std::string(snapshot);
        return Status::Ok();
      },
      [&](const WalRecord& record) {
        out.records.push_back(record);
        return Status::Ok();
      });
  out.status = stats.status();
  if (stats.ok()) out.stats = *stats;
  return out;
}

std::unique_ptr<WriteAheadLog> MustOpen(const WalOptions& options,
                                        metrics::Registry* registry = nullptr) {
  Result<std::unique_ptr<WriteAheadLog>> wal = WriteAheadLog::Open(options, registry);
  SLUICE_CHECK(wal.ok());
  return std::move(wal).value();
}

// Opens and replays, expecting success.
std::unique_ptr<WriteAheadLog> OpenReplayed(const WalOptions& options, Replayed* out = nullptr,
                                            metrics::Registry* registry = nullptr) {
  std::unique_ptr<WriteAheadLog> wal = MustOpen(options, registry);
  Replayed replayed = ReplayAll(*wal);
  EXPECT_TRUE(replayed.status.ok()) << replayed.status.ToString();
  if (out != nullptr) *out = std::move(replayed);
  return wal;
}

// Checks records are lsns first..first+n-1 with PayloadFor(lsn, ...) payloads and type lsn % 7.
void ExpectSequential(const std::vector<WalRecord>& records, uint64_t first, size_t n) {
  ASSERT_EQ(records.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(records[i].lsn, first + i);
    EXPECT_EQ(records[i].type, (first + i) % 7);
    EXPECT_EQ(IdOf(records[i].payload), first + i);
  }
}

// Appends records with PayloadFor(lsn, size) (type lsn % 7) durably, one by one.
void AppendSequential(WriteAheadLog& wal, size_t n, size_t size) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t lsn = wal.LastLsn() + 1;
    Result<uint64_t> got = wal.AppendDurable(lsn % 7, PayloadFor(lsn, size));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(*got, lsn);
  }
}

std::vector<std::string> FilesWithPrefix(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  SLUICE_CHECK(out.good());
}

void FlipByte(const std::string& path, size_t offset) {
  std::string data = ReadFile(path);
  SLUICE_CHECK(offset < data.size());
  data[offset] = static_cast<char>(data[offset] ^ 0x5A);
  WriteFile(path, data);
}

std::string SegmentName(uint64_t first_lsn) {
  char name[64];
  std::snprintf(name, sizeof(name), "wal-%020llu.log", static_cast<unsigned long long>(first_lsn));
  return name;
}

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
  options.dir = dir.path() + "/nested/wal";  // Created on Open.
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
    EXPECT_EQ(fs::file_size(dir.path() + "/" + expected[i]), 5 * kFrame) << expected[i];
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
  const std::string snap5 = dir.path() + "/snapshot-00000000000000000005.bin";
  const std::string snap12 = dir.path() + "/snapshot-00000000000000000012.bin";
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
  const std::string segment = dir.path() + "/" + SegmentName(1);
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

TEST(DataflowWalTest, TornTailAtEveryOffsetIsCutAndAppendsContinue) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  options.fsync = false;  // Only speed: the recovery logic is the same.
  const std::string segment = dir.path() + "/" + SegmentName(1);
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
  const std::string segment = dir.path() + "/" + SegmentName(1);
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
  const std::string segment = dir.path() + "/" + SegmentName(1);
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
  const std::string segment = dir.path() + "/" + SegmentName(1);
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
  const std::string first = dir.path() + "/" + SegmentName(1);
  const std::string middle = dir.path() + "/" + SegmentName(5);
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

// Child side of the crash test: replays the log into `tokens` (index = LSN), then appends from
// three threads, reporting each durable (lsn, token) on `report_fd`, and snapshots every 48
// records or so. Never returns.
[[noreturn]] void CrashChild(const std::string& dir, int report_fd, uint64_t generation) {
  WalOptions options;
  options.dir = dir;
  options.segment_bytes = 64 << 10;
  Result<std::unique_ptr<WriteAheadLog>> opened = WriteAheadLog::Open(options, nullptr);
  if (!opened.ok()) _exit(2);
  WriteAheadLog& wal = **opened;
  std::mutex mu;                       // Orders appends with the state, as the service must.
  std::vector<uint64_t> tokens(1, 0);  // tokens[lsn].
  Result<ReplayStats> stats = wal.Replay(
      [&](uint64_t lsn, std::string_view snapshot) {
        tokens.resize(lsn + 1);
        std::memcpy(tokens.data() + 1, snapshot.data(), snapshot.size());
        return Status::Ok();
      },
      [&](const WalRecord& r) {
        tokens.push_back(IdOf(r.payload));
        return Status::Ok();
      });
  if (!stats.ok()) _exit(3);
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(generation * 3 + t);
      for (uint64_t i = 0;; ++i) {
        const uint64_t token = (generation << 40) | (t << 32) | i;
        const std::string payload = PayloadFor(token, 20 + rng() % 100000);
        uint64_t lsn;
        {
          std::lock_guard<std::mutex> lock(mu);
          Result<uint64_t> appended = wal.Append(1, payload);
          if (!appended.ok()) _exit(4);
          lsn = *appended;
          tokens.push_back(token);
          if (tokens.size() != lsn + 1) _exit(5);
        }
        if (!wal.WaitDurable(lsn).ok()) _exit(6);
        const uint64_t report[2] = {lsn, token};
        if (write(report_fd, report, sizeof(report)) != sizeof(report)) _exit(7);
        if (t == 0 && i % 16 == 15) {
          std::string snapshot;
          uint64_t snapshot_lsn;
          {
            std::lock_guard<std::mutex> lock(mu);
            snapshot_lsn = wal.LastLsn();
            snapshot.assign(reinterpret_cast<const char*>(tokens.data() + 1),
                            snapshot_lsn * sizeof(uint64_t));
          }
          if (!wal.WriteSnapshot(snapshot_lsn, snapshot).ok()) _exit(8);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  _exit(9);
}

TEST(DataflowWalTest, SurvivesKillNineAtRandomMoments) {
  TempDir dir;
  std::mt19937 rng(12345);
  std::map<uint64_t, uint64_t> acked;  // lsn -> token, over all generations.
  size_t kills_with_acks = 0;
  for (uint64_t generation = 1; generation <= 20; ++generation) {
    SCOPED_TRACE("generation " + std::to_string(generation));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      CrashChild(dir.path(), fds[1], generation);
    }
    close(fds[1]);
    // Kill after a random number of acknowledgements (every fourth generation: none, so it
    // often dies in Open or Replay) plus a random delay. Counting acks rather than time keeps
    // the test meaningful on a loaded machine.
    const size_t kill_after = generation % 4 == 1 ? 0 : rng() % 150;
    size_t acks = 0;
    auto take = [&](const uint64_t(&report)[2]) {
      EXPECT_TRUE(acked.emplace(report[0], report[1]).second) << "LSN acked twice";
      ++acks;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (acks < kill_after && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      uint64_t report[2];
      if (read(fds[0], report, sizeof(report)) != sizeof(report)) break;
      take(report);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
    uint64_t report[2];
    ssize_t n;
    while ((n = read(fds[0], report, sizeof(report))) == sizeof(report)) take(report);
    EXPECT_EQ(n, 0);
    close(fds[0]);
    kills_with_acks += acks > 0;

    // Recover in this process and check every acknowledged record.
    WalOptions options;
    options.dir = dir.path();
    options.segment_bytes = 64 << 10;
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    std::vector<uint64_t> tokens(1, 0);
    if (replayed.has_snapshot) {
      ASSERT_EQ(replayed.snapshot.size(), replayed.snapshot_lsn * sizeof(uint64_t));
      tokens.resize(replayed.snapshot_lsn + 1);
      std::memcpy(tokens.data() + 1, replayed.snapshot.data(), replayed.snapshot.size());
    }
    for (const WalRecord& r : replayed.records) {
      ASSERT_EQ(r.lsn, tokens.size());  // In order, no gaps, no repeats.
      const uint64_t token = IdOf(r.payload);
      ASSERT_NE(token, ~uint64_t{0}) << "damaged payload at LSN " << r.lsn;
      tokens.push_back(token);
    }
    for (const auto& [lsn, token] : acked) {
      ASSERT_LT(lsn, tokens.size()) << "acknowledged LSN " << lsn << " lost";
      ASSERT_EQ(tokens[lsn], token) << "LSN " << lsn;
    }
    std::set<uint64_t> unique(tokens.begin() + 1, tokens.end());
    EXPECT_EQ(unique.size(), tokens.size() - 1) << "a record was replayed twice";
    // Unacknowledged records past the end are forgotten by the next child; drop their acks.
    ASSERT_TRUE(wal->Close().ok());
  }
  EXPECT_GE(kills_with_acks, 5u);  // Most even generations acknowledge something.
  EXPECT_GE(acked.size(), 100u);
}

TEST(DataflowWalTest, WriteErrorIsFailStop) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Writes past 20000 bytes fail with EFBIG.
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{20000, 20000};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(2);
    Result<std::unique_ptr<WriteAheadLog>> wal = WriteAheadLog::Open(options, nullptr);
    if (!wal.ok() || !(*wal)
                          ->Replay([](uint64_t, std::string_view) { return Status::Ok(); },
                                   [](const WalRecord&) { return Status::Ok(); })
                          .ok()) {
      _exit(3);
    }
    Status error;
    for (int i = 0; i < 100 && error.ok(); ++i) {
      error = (*wal)->AppendDurable(1, PayloadFor(i, 1000)).status();
    }
    const uint64_t durable = (*wal)->DurableLsn();
    if (write(fds[1], &durable, sizeof(durable)) != sizeof(durable)) _exit(4);
    if (error.ok() || error.code() != StatusCode::kInternal) _exit(5);
    if (durable >= (*wal)->LastLsn()) _exit(6);
    // Sticky: nothing more is accepted, nothing more is claimed durable.
    if ((*wal)->Append(1, "x").status() != error) _exit(7);
    if ((*wal)->WaitDurable((*wal)->LastLsn()) != error) _exit(8);
    if (!(*wal)->WaitDurable(durable).ok()) _exit(9);
    if ((*wal)->Close() != error) _exit(10);
    _exit(0);
  }
  close(fds[1]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  uint64_t durable = 0;
  ASSERT_EQ(read(fds[0], &durable, sizeof(durable)), ssize_t{sizeof(durable)});
  close(fds[0]);
  EXPECT_GT(durable, 10u);
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ASSERT_EQ(replayed.records.size(), durable);
  EXPECT_GT(replayed.stats.truncated_bytes, 0u);  // The partly written record.
}

}  // namespace
}  // namespace sluice::dataflow
