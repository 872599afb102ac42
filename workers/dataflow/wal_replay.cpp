// Recovery of the write-ahead log (WriteAheadLog::Replay): the newest snapshot that validates,
// then every later record in LSN order; a torn tail of the last segment is cut off, any other
// damage is Corruption naming the file and offset (write_ahead_log.h, "Recovery"). On success
// the log is ready for appends, and the files the replay made obsolete are removed.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/file/atomic_file.h"
#include "common/file/read_file.h"
#include "common/wire/frame.h"
#include "workers/dataflow/wal_file_io.h"
#include "workers/dataflow/wal_snapshot_file.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {

using wal_internal::Corrupt;
using wal_internal::IoError;
using wal_internal::kReadAll;
using wal_internal::kSegmentPrefix;
using wal_internal::kSegmentSuffix;
using wal_internal::kSnapshotPrefix;
using wal_internal::kSnapshotSuffix;
using wal_internal::kTempSuffix;
using wal_internal::LoadU32;
using wal_internal::LoadU64;
using wal_internal::ParseLsnName;
using wal_internal::ReadSnapshotFile;
using wal_internal::SyncDir;
using wal_internal::SyncPath;

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCorruptSuffix = ".corrupt";
constexpr size_t kRecordPrefixBytes = 12;  // u64 lsn, u32 type.

// True when data holds, at or after `from`, a valid WAL record frame with an LSN >= min_lsn:
// evidence that a bad frame before it is damage in the middle of the log, not a torn tail. Only
// record frames count, so a payload that embeds wire frames of its own is not mistaken for one.
bool ValidRecordAfter(std::string_view data, size_t from, uint64_t min_lsn) {
  const std::string_view magic("SLW1", 4);
  for (size_t p = data.find(magic, from); p != std::string_view::npos;
       p = data.find(magic, p + 1)) {
    Result<wire::FrameScan> scan = wire::ScanFrame(data.substr(p), kReadAll);
    if (!scan.ok() || !scan->complete) continue;
    if (scan->frame.type != kWalRecordFrameType) continue;
    if (scan->frame.payload.size() < kRecordPrefixBytes) continue;
    if (LoadU64(scan->frame.payload.data()) >= min_lsn) return true;
  }
  return false;
}

}  // namespace

Result<ReplayStats> WriteAheadLog::Replay(
    const std::function<Status(uint64_t, std::string_view)>& on_snapshot,
    const std::function<Status(const WalRecord&)>& on_record) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != State::kNew) {
      return Status::InvalidArgument("write-ahead log " + options_.dir +
                                     ": Replay may be called once, right after Open");
    }
    state_ = State::kReplaying;
  }
  Result<ReplayStats> result = ReplayFiles(on_snapshot, on_record);
  std::lock_guard<std::mutex> lock(mu_);
  if (!result.ok()) {
    error_ = result.status();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  state_ = State::kOpen;
  cv_.notify_all();
  return result;
}

Result<ReplayStats> WriteAheadLog::ReplayFiles(
    const std::function<Status(uint64_t, std::string_view)>& on_snapshot,
    const std::function<Status(const WalRecord&)>& on_record) {
  ReplayStats stats;
  struct NamedFile {
    uint64_t lsn;
    std::string path;
  };
  std::vector<NamedFile> snapshots;
  std::vector<NamedFile> segments;
  std::error_code ec;
  for (fs::directory_iterator it(options_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (auto lsn = ParseLsnName(name, kSegmentPrefix, kSegmentSuffix)) {
      segments.push_back({*lsn, it->path().string()});
    } else if (auto snap_lsn = ParseLsnName(name, kSnapshotPrefix, kSnapshotSuffix)) {
      snapshots.push_back({*snap_lsn, it->path().string()});
    } else if (name.starts_with(kSnapshotPrefix) &&
               (file::IsAtomicWriteTemp(name) || name.ends_with(kTempSuffix))) {
      // A snapshot that was never completed (".tmp" is the name older versions used).
      ::unlink(it->path().c_str());
    }
  }
  if (ec) {
    return Status::Internal("write-ahead log: cannot list " + options_.dir + ": " + ec.message());
  }
  auto by_lsn = [](const NamedFile& a, const NamedFile& b) { return a.lsn < b.lsn; };
  std::sort(snapshots.begin(), snapshots.end(), by_lsn);
  std::sort(segments.begin(), segments.end(), by_lsn);

  // The newest snapshot that validates.
  std::vector<std::string> corrupt_snapshots;
  std::optional<size_t> chosen;
  Status first_snapshot_error;
  std::string snapshot_bytes;
  for (size_t i = snapshots.size(); i-- > 0;) {
    Result<std::string> data = ReadSnapshotFile(snapshots[i].path, snapshots[i].lsn);
    if (data.ok()) {
      chosen = i;
      snapshot_bytes = std::move(data).value();
      break;
    }
    if (data.status().code() != StatusCode::kCorruption) return data.status();
    if (first_snapshot_error.ok()) first_snapshot_error = data.status();
    corrupt_snapshots.push_back(snapshots[i].path);
  }
  if (!snapshots.empty() && !chosen) return first_snapshot_error;
  const uint64_t base = chosen ? snapshots[*chosen].lsn : 0;
  if (chosen) {
    stats.has_snapshot = true;
    stats.snapshot_lsn = base;
    stats.snapshot_bytes = snapshot_bytes.size();
    stats.corrupt_snapshots = corrupt_snapshots.size();
    SLUICE_RETURN_IF_ERROR(on_snapshot(base, snapshot_bytes));
    std::string().swap(snapshot_bytes);
  }

  // Segments whose records are all covered by the snapshot: a later one starts at or before
  // base + 1. They are deleted once the replay has succeeded.
  std::vector<std::string> obsolete;
  size_t first_needed = 0;
  while (first_needed + 1 < segments.size() && segments[first_needed + 1].lsn <= base + 1) {
    obsolete.push_back(segments[first_needed].path);
    ++first_needed;
  }
  if (first_needed < segments.size() && segments[first_needed].lsn > base + 1) {
    return Corrupt(segments[first_needed].path, 0,
                   "records " + std::to_string(base + 1) + " to " +
                       std::to_string(segments[first_needed].lsn - 1) + " are missing (" +
                       (chosen ? "the snapshot covers up to " + std::to_string(base)
                               : std::string("no snapshot")) +
                       ")");
  }

  uint64_t next_lsn = base + 1;  // After the loop: one past the last record in the log.
  uint64_t active_size = 0;
  for (size_t i = first_needed; i < segments.size(); ++i) {
    const NamedFile& segment = segments[i];
    const bool last = i + 1 == segments.size();
    Result<std::string> read = file::ReadWholeFile(segment.path);
    if (!read.ok()) return read.status().WithContext("write-ahead log");
    std::string data = std::move(*read);
    ++stats.segments;
    uint64_t expected = segment.lsn;
    wire::FrameReader reader(data, kReadAll);
    size_t bad_offset = 0;
    Status bad;
    while (!reader.AtEnd()) {
      const size_t at = reader.offset();
      Result<wire::Frame> frame = reader.Next();
      if (!frame.ok()) {
        bad = frame.status();
        bad_offset = at;
        break;
      }
      if (frame->type != kWalRecordFrameType || frame->payload.size() < kRecordPrefixBytes) {
        return Corrupt(segment.path, at, "not a write-ahead log record");
      }
      const uint64_t lsn = LoadU64(frame->payload.data());
      if (lsn != expected) {
        return Corrupt(
            segment.path, at,
            "record has LSN " + std::to_string(lsn) + ", expected " + std::to_string(expected));
      }
      if (lsn > base) {
        WalRecord record{lsn, LoadU32(frame->payload.data() + 8),
                         std::string(frame->payload.substr(kRecordPrefixBytes))};
        SLUICE_RETURN_IF_ERROR(on_record(record));
        const uint64_t frame_bytes = reader.offset() - at;
        ++stats.records;
        stats.record_bytes += frame_bytes;
        std::lock_guard<std::mutex> lock(mu_);
        AddRecordBytesLocked(lsn, frame_bytes);
      } else {
        ++stats.skipped_records;
      }
      ++expected;
    }
    if (!bad.ok()) {
      if (!last) {
        return Corrupt(segment.path, bad_offset,
                       "bad frame in a segment that is not the last: " + bad.ToString(),
                       bad.field());
      }
      if (!reader.truncated() && ValidRecordAfter(data, bad_offset + 1, expected)) {
        return Corrupt(segment.path, bad_offset,
                       "bad frame followed by valid records: " + bad.ToString(), bad.field());
      }
      // A torn or damaged tail, as a crash mid-write leaves: cut it off.
      stats.truncated_bytes = data.size() - bad_offset;
      stats.truncated_file = segment.path;
      if (::truncate(segment.path.c_str(), static_cast<off_t>(bad_offset)) != 0) {
        return IoError("truncate", segment.path, errno);
      }
      data.resize(bad_offset);
    }
    // What was replayed must be on disk before the caller acts on it: after a process crash the
    // last records may have been in the page cache only.
    if (options_.fsync) SLUICE_RETURN_IF_ERROR(SyncPath(segment.path));
    if (!last && segments[i + 1].lsn != expected) {
      return Corrupt(segments[i + 1].path, 0,
                     "segment starts at LSN " + std::to_string(segments[i + 1].lsn) +
                         " but the previous one ends at LSN " + std::to_string(expected - 1));
    }
    next_lsn = expected;
    if (last) active_size = data.size();
  }

  std::vector<Segment> kept;
  for (size_t i = first_needed; i < segments.size(); ++i) {
    kept.push_back({segments[i].lsn, segments[i].path});
  }
  uint64_t last_lsn = next_lsn - 1;
  if (last_lsn < base) {
    // The log ends before the snapshot (its last records were lost with fsync off, or the
    // snapshot outlived them): everything in it is covered, and appends start after base.
    for (const Segment& s : kept) obsolete.push_back(s.path);
    kept.clear();
    last_lsn = base;
  }
  if (kept.empty()) {
    const std::string path = SegmentPath(last_lsn + 1);
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return IoError("create", path, errno);
    if (options_.fsync) SLUICE_RETURN_IF_ERROR(SyncDir(options_.dir));
    kept.push_back({last_lsn + 1, path});
    segment_size_ = 0;
  } else {
    fd_ = ::open(kept.back().path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) return IoError("open", kept.back().path, errno);
    segment_size_ = active_size;
  }
  active_path_ = kept.back().path;
  dirty_ = false;

  // Clean up only now that the replay has succeeded.
  bool removed = false;
  for (const std::string& path : obsolete) removed |= ::unlink(path.c_str()) == 0;
  for (const std::string& path : corrupt_snapshots) {
    removed |= ::rename(path.c_str(), (path + std::string(kCorruptSuffix)).c_str()) == 0;
  }
  if (chosen) {
    for (size_t i = 0; i < *chosen; ++i) removed |= ::unlink(snapshots[i].path.c_str()) == 0;
  }
  if (removed && options_.fsync) SLUICE_RETURN_IF_ERROR(SyncDir(options_.dir));

  std::lock_guard<std::mutex> lock(mu_);
  segments_ = std::move(kept);
  snapshot_lsn_ = base;
  last_lsn_.store(last_lsn);
  written_lsn_.store(last_lsn);
  durable_lsn_.store(last_lsn);
  stats.last_lsn = last_lsn;
  return stats;
}

}  // namespace sluice::dataflow
