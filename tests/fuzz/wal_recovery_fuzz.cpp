// libFuzzer target for the dataflow write-ahead log's recovery (workers/dataflow/
// write_ahead_log.h, WriteAheadLog::Replay in wal_replay.cpp, the snapshot reader in
// wal_snapshot_file.cpp) from arbitrary bytes on disk.
//
// Input: a flags byte, a little-endian u16 split position (taken modulo the data size + 1), then
// the data. Into a fresh directory go, by flags & 3 (S = 1 + bits 2-3 of flags below):
//   0: the data as the segment wal-1;
//   1: data[0, split) as wal-1 and data[split, end) as the next segment, named after the frames
//      of the first (plus one, a gap, when flags bit 2 is set);
//   2: data[0, split) as snapshot-S and data[split, end) as the segment wal-(S + 1), or wal-1
//      when flags bit 4 is set (records the snapshot covers);
//   3: data[0, split) as snapshot-S and data[split, end) as a newer snapshot, S + 1 (S + 2 when
//      flags bit 4 is set), and no segment.
// With flags bit 5 set the data is first turned into frames with valid CRCs, so the fuzzer reaches
// the checks behind them: it is read as (u16 LE type, u32 LE length, payload) items, each written
// as a wire frame of that type, except type 0xffff, whose payload is written as it is (damage);
// bytes left over after the last whole item are written as they are (a torn tail).
//
// Recovery must return an error or a consistent state, never crash. When it fails, the log
// refuses appends. When it succeeds: the snapshot handed over and the stats agree; the records
// handed over are consecutive from the snapshot's LSN + 1 to last_lsn; LastLsn and DurableLsn
// are last_lsn; an appended record gets last_lsn + 1 and, after closing and recovering again,
// the second recovery yields the same snapshot and records plus the appended one, with nothing
// cut off.
//
// Files live in one temporary directory made per process, emptied for every input.
//
// Fuzz it with `scripts/fuzz.sh wal_recovery [seconds]` (tests/fuzz/CMakeLists.txt).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/status.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"
#include "tests/fuzz/fuzz_require.h"
#include "workers/dataflow/write_ahead_log.h"

namespace {

namespace fs = std::filesystem;
using sluice::Status;
using sluice::dataflow::ReplayStats;
using sluice::dataflow::WalOptions;
using sluice::dataflow::WalRecord;
using sluice::dataflow::WriteAheadLog;

constexpr size_t kMaxInputBytes = 64 << 10;
constexpr uint32_t kAppendedType = 0x5eed;
constexpr std::string_view kAppendedPayload = "appended after recovery";

using sluice::fuzz::Require;

// The process's temporary directory, removed at exit.
class TempDir {
 public:
  TempDir() {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = fs::temp_directory_path() /
            ("sluice_wal_fuzz_" + std::to_string(::getpid()) + "_" + std::to_string(stamp));
    std::error_code ec;
    fs::create_directories(path_, ec);
    Require(!ec, "create the temporary directory");
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string LsnName(std::string_view prefix, uint64_t lsn, std::string_view suffix) {
  char digits[21];
  std::snprintf(digits, sizeof(digits), "%020llu", static_cast<unsigned long long>(lsn));
  return std::string(prefix) + digits + std::string(suffix);
}

void WriteFile(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  Require(out.good(), "write an input file");
}

// The data of an input with flags bit 5 (see the header comment).
std::string Framed(std::string_view in) {
  std::string out;
  while (in.size() >= 6) {
    const auto type =
        static_cast<uint16_t>(static_cast<uint8_t>(in[0]) | (static_cast<uint8_t>(in[1]) << 8));
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i) length |= uint32_t{static_cast<uint8_t>(in[2 + i])} << (8 * i);
    const std::string_view payload = in.substr(6, std::min<size_t>(length, in.size() - 6));
    if (type == 0xffff) {
      out.append(payload);
    } else {
      Require(sluice::wire::AppendFrame(type, payload, &out).ok(), "frame an item");
    }
    in.remove_prefix(6 + payload.size());
  }
  out.append(in);
  return out;
}

// Whole frames at the front of `bytes`, as the log's reader sees them.
uint64_t CountFrames(std::string_view bytes) {
  sluice::wire::FrameReader reader(
      bytes, sluice::wire::FrameReaderOptions{sluice::wire::kMaxFramePayloadBytes});
  uint64_t n = 0;
  while (!reader.AtEnd() && reader.Next().ok()) ++n;
  return n;
}

struct Recovered {
  Status status;
  ReplayStats stats;
  int snapshot_calls = 0;
  uint64_t snapshot_lsn = 0;
  std::string snapshot;
  std::vector<WalRecord> records;
};

// Opens the log in `dir` and replays it; the log stays open in *wal for the caller.
Recovered Recover(const std::string& dir, std::unique_ptr<WriteAheadLog>* wal) {
  Recovered r;
  WalOptions options;
  options.dir = dir;
  options.fsync = false;  // Only durability against power loss needs it; the checks do not.
  auto opened = WriteAheadLog::Open(options, nullptr);
  Require(opened.ok(), "open the log directory");
  *wal = std::move(opened).value();
  auto stats = (*wal)->Replay(
      [&](uint64_t lsn, std::string_view bytes) {
        ++r.snapshot_calls;
        r.snapshot_lsn = lsn;
        r.snapshot = std::string(bytes);
        return Status::Ok();
      },
      [&](const WalRecord& record) {
        r.records.push_back(record);
        return Status::Ok();
      });
  if (stats.ok()) {
    r.stats = *stats;
  } else {
    r.status = stats.status();
  }
  return r;
}

void CheckConsistent(const Recovered& r, const WriteAheadLog& wal, size_t input_bytes) {
  const ReplayStats& s = r.stats;
  Require(r.snapshot_calls == (s.has_snapshot ? 1 : 0), "the snapshot is handed over once");
  if (s.has_snapshot) {
    Require(r.snapshot_lsn == s.snapshot_lsn && r.snapshot.size() == s.snapshot_bytes,
            "the snapshot handed over is the one the stats name");
  } else {
    Require(s.snapshot_lsn == 0 && s.snapshot_bytes == 0, "no snapshot, no snapshot LSN");
  }
  Require(s.records == r.records.size(), "stats count the records handed over");
  for (size_t i = 0; i < r.records.size(); ++i) {
    Require(r.records[i].lsn == s.snapshot_lsn + 1 + i, "records consecutive after the snapshot");
  }
  Require(s.last_lsn == s.snapshot_lsn + r.records.size(), "last_lsn is the last record's");
  Require(wal.LastLsn() == s.last_lsn && wal.DurableLsn() == s.last_lsn,
          "the log continues after last_lsn");
  Require(s.truncated_bytes <= input_bytes, "cut no more than was written");
  Require((s.truncated_bytes > 0) == !s.truncated_file.empty(), "a cut names its file");
}

void Run(const fs::path& dir, uint8_t flags, uint16_t split_in, std::string_view input) {
  const std::string framed = (flags & 0x20) ? Framed(input) : std::string();
  const std::string_view data = (flags & 0x20) ? std::string_view(framed) : input;
  const size_t split = split_in % (data.size() + 1);
  const std::string_view head = data.substr(0, split);
  const std::string_view tail = data.substr(split);
  const uint64_t snapshot_lsn = 1 + ((flags >> 2) & 3);
  const bool bit4 = (flags >> 4) & 1;
  switch (flags & 3) {
    case 0:
      WriteFile(dir / LsnName("wal-", 1, ".log"), data);
      break;
    case 1: {
      WriteFile(dir / LsnName("wal-", 1, ".log"), head);
      const uint64_t next = 1 + CountFrames(head) + ((flags >> 2) & 1);
      WriteFile(dir / LsnName("wal-", next, ".log"), tail);
      break;
    }
    case 2:
      WriteFile(dir / LsnName("snapshot-", snapshot_lsn, ".bin"), head);
      WriteFile(dir / LsnName("wal-", bit4 ? 1 : snapshot_lsn + 1, ".log"), tail);
      break;
    default:
      WriteFile(dir / LsnName("snapshot-", snapshot_lsn, ".bin"), head);
      WriteFile(dir / LsnName("snapshot-", snapshot_lsn + (bit4 ? 2 : 1), ".bin"), tail);
      break;
  }

  std::unique_ptr<WriteAheadLog> wal;
  const Recovered first = Recover(dir.string(), &wal);
  if (!first.status.ok()) {
    Require(!wal->Append(kAppendedType, kAppendedPayload).ok(),
            "a log whose recovery failed refuses appends");
    return;
  }
  CheckConsistent(first, *wal, data.size());

  auto lsn = wal->Append(kAppendedType, kAppendedPayload);
  Require(lsn.ok() && *lsn == first.stats.last_lsn + 1, "the next append gets last_lsn + 1");
  Require(wal->WaitDurable(*lsn).ok(), "the appended record is written");
  Require(wal->Close().ok(), "the log closes");
  wal.reset();

  const Recovered second = Recover(dir.string(), &wal);
  Require(second.status.ok(), "a recovered log with one more record recovers again");
  CheckConsistent(second, *wal, data.size());
  Require(second.stats.truncated_bytes == 0, "nothing is cut the second time");
  Require(second.stats.corrupt_snapshots == 0, "damaged snapshots were set aside the first time");
  Require(second.snapshot_calls == first.snapshot_calls &&
              second.snapshot_lsn == first.snapshot_lsn && second.snapshot == first.snapshot,
          "the same snapshot the second time");
  Require(second.records.size() == first.records.size() + 1, "one more record");
  for (size_t i = 0; i < first.records.size(); ++i) {
    const WalRecord& a = first.records[i];
    const WalRecord& b = second.records[i];
    Require(a.lsn == b.lsn && a.type == b.type && a.payload == b.payload,
            "the same records the second time");
  }
  const WalRecord& appended = second.records.back();
  Require(appended.lsn == *lsn && appended.type == kAppendedType &&
              appended.payload == kAppendedPayload,
          "the appended record survives recovery");
  Require(wal->Close().ok(), "the log closes again");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 3 || size > kMaxInputBytes) return 0;
  static const TempDir temp;
  const fs::path dir = temp.path() / "log";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  Require(!ec, "create the log directory");
  const uint16_t split = static_cast<uint16_t>(bytes[1] | (bytes[2] << 8));
  Run(dir, bytes[0], split, std::string_view(reinterpret_cast<const char*>(bytes) + 3, size - 3));
  fs::remove_all(dir, ec);
  return 0;
}
