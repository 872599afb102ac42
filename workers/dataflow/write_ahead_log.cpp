#include "workers/dataflow/write_ahead_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

#include "common/wire/encoder.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"

namespace sluice::dataflow {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kSegmentPrefix = "wal-";
constexpr std::string_view kSegmentSuffix = ".log";
constexpr std::string_view kSnapshotPrefix = "snapshot-";
constexpr std::string_view kSnapshotSuffix = ".bin";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr std::string_view kCorruptSuffix = ".corrupt";
constexpr size_t kLsnDigits = 20;
constexpr size_t kRecordPrefixBytes = 12;  // u64 lsn, u32 type.

// Appends write buffered records (without fsync) once this much is pending, and wait for the
// flusher once kMaxPendingBytes is pending, so memory stays bounded when nobody waits.
constexpr size_t kWriteBehindBytes = size_t{1} << 20;
constexpr size_t kMaxPendingBytes = size_t{64} << 20;
constexpr size_t kSnapshotChunkBytes = size_t{4} << 20;
// BytesSinceSnapshot may overcount by less than this.
constexpr uint64_t kByteMarkSpacing = 4096;

const wire::FrameReaderOptions kReadAll{wire::kMaxFramePayloadBytes};

std::string Errno(int err) { return std::strerror(err); }

Status IoError(std::string_view what, const std::string& path, int err) {
  return Status::Internal("write-ahead log: cannot " + std::string(what) + " " + path + ": " +
                          Errno(err));
}

std::string LsnName(std::string_view prefix, uint64_t lsn, std::string_view suffix) {
  char digits[kLsnDigits + 1];
  std::snprintf(digits, sizeof(digits), "%020" PRIu64, lsn);
  return std::string(prefix) + digits + std::string(suffix);
}

// The LSN in a name `<prefix><20 digits><suffix>`, or nullopt for any other name.
std::optional<uint64_t> ParseLsnName(std::string_view name, std::string_view prefix,
                                     std::string_view suffix) {
  if (name.size() != prefix.size() + kLsnDigits + suffix.size()) return std::nullopt;
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size(), kLsnDigits);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t lsn = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), lsn);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return lsn;
}

uint64_t LoadU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t LoadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError("write", path, errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status PreadAll(int fd, char* data, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, data, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError("read", path, errno);
    }
    if (r == 0) return Status::Internal("write-ahead log: " + path + " shrank while being read");
    data += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return Status::Ok();
}

Status DataSync(int fd, const std::string& path) {
  while (::fdatasync(fd) != 0) {
    if (errno != EINTR) return IoError("fdatasync", path, errno);
  }
  return Status::Ok();
}

// Makes creations, renames and deletions in dir durable. EINVAL (a filesystem that cannot sync
// directories) is not an error.
Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("open directory", dir, errno);
  int rc;
  while ((rc = ::fsync(fd)) != 0 && errno == EINTR) {
  }
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return IoError("fsync directory", dir, err);
  return Status::Ok();
}

Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  Status s = DataSync(fd, path);
  ::close(fd);
  return s;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("stat", path, err);
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  Status s = PreadAll(fd, data.data(), data.size(), 0, path);
  ::close(fd);
  if (!s.ok()) return s;
  return data;
}

Status Corrupt(const std::string& path, uint64_t offset, std::string_view what,
               std::string field = "wal") {
  return Status::Corruption("write-ahead log file " + path + " at byte offset " +
                                std::to_string(offset) + ": " + std::string(what),
                            std::move(field));
}

// Reads and validates a snapshot file written by WriteSnapshotFile; returns its contents.
// Corruption for anything malformed; Internal for I/O errors. Reads frame by frame, so memory
// is the snapshot plus one chunk.
Result<std::string> ReadSnapshotFile(const std::string& path, uint64_t lsn) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError("stat", path, errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string out;
  std::string buf;
  uint64_t offset = 0;
  uint64_t total = 0;
  bool begun = false;
  bool ended = false;
  while (offset < size) {
    if (ended) return Corrupt(path, offset, "bytes after the snapshot's end frame");
    if (size - offset < wire::kFrameHeaderSize) return Corrupt(path, offset, "truncated frame");
    buf.resize(wire::kFrameHeaderSize);
    SLUICE_RETURN_IF_ERROR(PreadAll(fd, buf.data(), buf.size(), offset, path));
    Result<wire::FrameScan> scan = wire::ScanFrame(buf, kReadAll);
    if (scan.ok() && !scan->complete) {
      if (scan->bytes_needed > size - offset) return Corrupt(path, offset, "truncated frame");
      buf.resize(scan->bytes_needed);
      SLUICE_RETURN_IF_ERROR(PreadAll(fd, buf.data() + wire::kFrameHeaderSize,
                                      buf.size() - wire::kFrameHeaderSize,
                                      offset + wire::kFrameHeaderSize, path));
      scan = wire::ScanFrame(buf, kReadAll);
    }
    if (!scan.ok()) {
      return Corrupt(path, offset, scan.status().ToString(), scan.status().field());
    }
    if (!scan->complete) return Corrupt(path, offset, "truncated frame");
    const wire::Frame& frame = scan->frame;
    switch (frame.type) {
      case kSnapshotBeginFrameType:
      case kSnapshotEndFrameType: {
        if (frame.payload.size() != 16) return Corrupt(path, offset, "bad snapshot marker size");
        const uint64_t marker_lsn = LoadU64(frame.payload.data());
        const uint64_t marker_total = LoadU64(frame.payload.data() + 8);
        if (marker_lsn != lsn) {
          return Corrupt(path, offset,
                         "snapshot says LSN " + std::to_string(marker_lsn) + ", name says " +
                             std::to_string(lsn));
        }
        if (frame.type == kSnapshotBeginFrameType) {
          if (begun) return Corrupt(path, offset, "second snapshot begin frame");
          if (marker_total > size) return Corrupt(path, offset, "snapshot size beyond the file");
          begun = true;
          total = marker_total;
          out.reserve(total);
        } else {
          if (!begun) return Corrupt(path, offset, "snapshot end frame before its begin frame");
          if (marker_total != total || out.size() != total) {
            return Corrupt(path, offset,
                           "snapshot has " + std::to_string(out.size()) + " bytes, expected " +
                               std::to_string(total));
          }
          ended = true;
        }
        break;
      }
      case kSnapshotChunkFrameType:
        if (!begun) return Corrupt(path, offset, "snapshot chunk before the begin frame");
        if (out.size() + frame.payload.size() > total) {
          return Corrupt(path, offset, "snapshot chunks exceed the declared size");
        }
        out.append(frame.payload);
        break;
      default:
        return Corrupt(path, offset, "unexpected frame type " + std::to_string(frame.type));
    }
    offset += scan->frame_size;
  }
  if (!ended) return Corrupt(path, offset, "snapshot has no end frame (incomplete file)");
  return out;
}

Status WriteSnapshotFile(const std::string& path, uint64_t lsn, std::string_view data, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", path, errno);
  Status s;
  std::string frame;
  std::string marker;
  wire::Encoder encoder(&marker);
  encoder.PutU64(lsn);
  encoder.PutU64(data.size());
  s = wire::AppendFrame(kSnapshotBeginFrameType, marker, &frame);
  if (s.ok()) s = WriteAll(fd, frame.data(), frame.size(), path);
  for (size_t offset = 0; s.ok() && offset < data.size(); offset += kSnapshotChunkBytes) {
    frame.clear();
    s = wire::AppendFrame(kSnapshotChunkFrameType, data.substr(offset, kSnapshotChunkBytes),
                          &frame);
    if (s.ok()) s = WriteAll(fd, frame.data(), frame.size(), path);
  }
  if (s.ok()) {
    frame.clear();
    s = wire::AppendFrame(kSnapshotEndFrameType, marker, &frame);
  }
  if (s.ok()) s = WriteAll(fd, frame.data(), frame.size(), path);
  if (s.ok() && sync) s = DataSync(fd, path);
  if (::close(fd) != 0 && s.ok()) s = IoError("close", path, errno);
  return s;
}

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

Result<std::unique_ptr<WriteAheadLog>> WriteAheadLog::Open(const WalOptions& options,
                                                           metrics::Registry* registry) {
  if (options.dir.empty()) return Status::InvalidArgument("must not be empty", "dir");
  if (options.segment_bytes == 0) return Status::InvalidArgument("must be > 0", "segment_bytes");
  if (options.group_commit_delay.count() < 0) {
    return Status::InvalidArgument("must be >= 0", "group_commit_delay");
  }
  std::error_code ec;
  const bool created = fs::create_directories(options.dir, ec);
  if (ec) {
    return Status::Internal("write-ahead log: cannot create directory " + options.dir + ": " +
                            ec.message());
  }
  if (created && options.fsync) {
    fs::path parent = fs::path(options.dir).lexically_normal();
    if (!parent.has_filename()) parent = parent.parent_path();
    parent = parent.parent_path();
    SLUICE_RETURN_IF_ERROR(SyncDir(parent.empty() ? "." : parent.string()));
  }
  const std::string lock_path = (fs::path(options.dir) / "LOCK").string();
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return IoError("open", lock_path, errno);
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd);
    if (err == EWOULDBLOCK) {
      return Status::Unavailable("write-ahead log " + options.dir +
                                 " is in use by another process (" + lock_path + " is locked)");
    }
    return IoError("lock", lock_path, err);
  }
  return std::unique_ptr<WriteAheadLog>(new WriteAheadLog(options, lock_fd, registry));
}

WriteAheadLog::WriteAheadLog(WalOptions options, int lock_fd, metrics::Registry* registry)
    : options_(std::move(options)), lock_fd_(lock_fd) {
  if (registry != nullptr) {
    fsync_seconds_ =
        &registry
             ->AddHistogram("sluice_dataflow_wal_fsync_seconds",
                            "Time to fdatasync a write-ahead log segment, in seconds.", {},
                            {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                             0.25, 0.5, 1, 2.5, 5, 10})
             .WithLabels({});
    bytes_total_ = &registry
                        ->AddCounter("sluice_dataflow_wal_bytes_total",
                                     "Bytes written to write-ahead log segments (record frames).")
                        .WithLabels({});
    records_total_ = &registry
                          ->AddCounter("sluice_dataflow_wal_records_total",
                                       "Records appended to the write-ahead log.")
                          .WithLabels({});
    fsyncs_total_ = &registry
                         ->AddCounter("sluice_dataflow_wal_fsyncs_total",
                                      "fdatasync calls on write-ahead log segments.")
                         .WithLabels({});
  }
}

WriteAheadLog::~WriteAheadLog() { (void)Close(); }

std::string WriteAheadLog::SegmentPath(uint64_t first_lsn) const {
  return (fs::path(options_.dir) / LsnName(kSegmentPrefix, first_lsn, kSegmentSuffix)).string();
}

std::string WriteAheadLog::SnapshotPath(uint64_t lsn) const {
  return (fs::path(options_.dir) / LsnName(kSnapshotPrefix, lsn, kSnapshotSuffix)).string();
}

Status WriteAheadLog::WritableLocked() const {
  if (!error_.ok()) return error_;
  switch (state_) {
    case State::kOpen:
      return Status::Ok();
    case State::kNew:
    case State::kReplaying:
      return Status::InvalidArgument("write-ahead log " + options_.dir +
                                     ": Replay must finish before appends and snapshots");
    case State::kClosed:
      return Status::Unavailable("write-ahead log " + options_.dir + " is closed");
  }
  return Status::Internal("write-ahead log: unknown state");
}

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
    } else if (name.starts_with(kSnapshotPrefix) && name.ends_with(kTempSuffix)) {
      ::unlink(it->path().c_str());  // A snapshot that was never completed.
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
    SLUICE_ASSIGN_OR_RETURN(std::string data, ReadWholeFile(segment.path));
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

Result<uint64_t> WriteAheadLog::Append(uint32_t type, std::string_view payload) {
  if (payload.size() > kWalMaxPayloadBytes) {
    return Status::TooLarge("write-ahead log record payload of " + std::to_string(payload.size()) +
                                " bytes is over the limit of " +
                                std::to_string(kWalMaxPayloadBytes),
                            "payload");
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    SLUICE_RETURN_IF_ERROR(WritableLocked());
    if (pending_.size() < kMaxPendingBytes) break;
    if (!flushing_) {
      SLUICE_RETURN_IF_ERROR(Flush(lock, /*sync=*/false));
    } else {
      cv_.wait(lock);
    }
  }
  const uint64_t lsn = last_lsn_.load(std::memory_order_relaxed) + 1;
  const size_t start = wire::BeginFrame(&pending_);
  wire::Encoder encoder(&pending_);
  encoder.PutU64(lsn);
  encoder.PutU32(type);
  encoder.PutRaw(payload);
  Status s = wire::FinishFrame(kWalRecordFrameType, start, &pending_);
  if (!s.ok()) return s;
  pending_ends_.push_back(pending_.size());
  last_lsn_.store(lsn);
  AddRecordBytesLocked(lsn, pending_.size() - start);
  stat_records_.fetch_add(1, std::memory_order_relaxed);
  if (records_total_ != nullptr) records_total_->Inc();
  if (pending_.size() >= kWriteBehindBytes && !flushing_) {
    SLUICE_RETURN_IF_ERROR(Flush(lock, /*sync=*/false));
  }
  return lsn;
}

Status WriteAheadLog::WaitDurable(uint64_t lsn) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (lsn <= durable_lsn_.load()) return Status::Ok();
    if (!error_.ok()) return error_;
    if (lsn > last_lsn_.load()) {
      return Status::InvalidArgument("write-ahead log " + options_.dir + ": LSN " +
                                     std::to_string(lsn) + " was never appended (last is " +
                                     std::to_string(last_lsn_.load()) + ")");
    }
    if (flushing_) {
      cv_.wait(lock);
      continue;
    }
    // Close flushes everything before it returns, so this is unreachable after Close.
    if (state_ != State::kOpen) return WritableLocked();
    SLUICE_RETURN_IF_ERROR(Flush(lock, /*sync=*/true));
  }
}

Result<uint64_t> WriteAheadLog::AppendDurable(uint32_t type, std::string_view payload) {
  SLUICE_ASSIGN_OR_RETURN(const uint64_t lsn, Append(type, payload));
  SLUICE_RETURN_IF_ERROR(WaitDurable(lsn));
  return lsn;
}

Status WriteAheadLog::Flush(std::unique_lock<std::mutex>& lock, bool sync) {
  flushing_ = true;
  if (sync && options_.fsync && options_.group_commit_delay.count() > 0) {
    lock.unlock();
    std::this_thread::sleep_for(options_.group_commit_delay);
    lock.lock();
  }
  // Take every record appended so far; appends during the I/O below go to a fresh pending_.
  batch_.swap(pending_);
  batch_ends_.swap(pending_ends_);
  const uint64_t first = written_lsn_.load() + 1;
  const uint64_t last = last_lsn_.load();
  lock.unlock();

  Status s;
  if (!batch_.empty()) s = WriteBatch(first);
  if (s.ok() && sync && options_.fsync) s = SyncActiveSegment();
  batch_.clear();
  batch_ends_.clear();
  if (batch_.capacity() > kMaxPendingBytes) std::string().swap(batch_);

  lock.lock();
  flushing_ = false;
  if (s.ok()) {
    written_lsn_.store(last);
    if (sync || !options_.fsync) durable_lsn_.store(last);
  } else if (error_.ok()) {
    error_ = s;  // Fail-stop: what is on disk is no longer known.
  }
  cv_.notify_all();
  return s;
}

Status WriteAheadLog::WriteBatch(uint64_t first_lsn) {
  uint64_t lsn = first_lsn;
  size_t offset = 0;
  size_t i = 0;
  while (i < batch_ends_.size()) {
    if (segment_size_ >= options_.segment_bytes) SLUICE_RETURN_IF_ERROR(RollSegment(lsn));
    // Records up to and including the one that takes the segment to segment_bytes.
    size_t j = i;
    uint64_t size = segment_size_;
    while (j < batch_ends_.size()) {
      size += batch_ends_[j] - (j == 0 ? 0 : batch_ends_[j - 1]);
      ++j;
      if (size >= options_.segment_bytes) break;
    }
    const size_t end = batch_ends_[j - 1];
    dirty_ = true;
    SLUICE_RETURN_IF_ERROR(WriteAll(fd_, batch_.data() + offset, end - offset, active_path_));
    segment_size_ += end - offset;
    stat_bytes_.fetch_add(end - offset, std::memory_order_relaxed);
    if (bytes_total_ != nullptr) bytes_total_->Inc(static_cast<double>(end - offset));
    lsn += j - i;
    i = j;
    offset = end;
  }
  return Status::Ok();
}

Status WriteAheadLog::RollSegment(uint64_t first_lsn) {
  // The closed segment must be complete on disk before records after it can be.
  if (options_.fsync) SLUICE_RETURN_IF_ERROR(SyncActiveSegment());
  const std::string path = SegmentPath(first_lsn);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", path, errno);
  if (options_.fsync) {
    Status s = SyncDir(options_.dir);
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
  }
  ::close(fd_);
  fd_ = fd;
  active_path_ = path;
  segment_size_ = 0;
  dirty_ = false;
  std::lock_guard<std::mutex> lock(mu_);
  segments_.push_back({first_lsn, path});
  return Status::Ok();
}

Status WriteAheadLog::SyncActiveSegment() {
  if (!dirty_) return Status::Ok();
  const Clock::time_point start = Clock::now();
  SLUICE_RETURN_IF_ERROR(DataSync(fd_, active_path_));
  dirty_ = false;
  stat_fsyncs_.fetch_add(1, std::memory_order_relaxed);
  if (fsyncs_total_ != nullptr) fsyncs_total_->Inc();
  if (fsync_seconds_ != nullptr) {
    fsync_seconds_->Observe(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return Status::Ok();
}

Status WriteAheadLog::WriteSnapshot(uint64_t lsn, std::string_view snapshot) {
  std::lock_guard<std::mutex> snapshot_lock(snapshot_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    SLUICE_RETURN_IF_ERROR(WritableLocked());
    if (lsn > last_lsn_.load()) {
      return Status::InvalidArgument("snapshot LSN " + std::to_string(lsn) +
                                         " is after the last appended LSN " +
                                         std::to_string(last_lsn_.load()),
                                     "lsn");
    }
    if (lsn < snapshot_lsn_) {
      return Status::InvalidArgument("snapshot LSN " + std::to_string(lsn) +
                                         " is older than the current snapshot's " +
                                         std::to_string(snapshot_lsn_),
                                     "lsn");
    }
  }
  // Keeps the log contiguous with the snapshot: a restart never finds the snapshot newer than
  // the log unless records were lost with fsync off.
  SLUICE_RETURN_IF_ERROR(WaitDurable(lsn));

  const std::string path = SnapshotPath(lsn);
  const std::string tmp = path + std::string(kTempSuffix);
  Status s = WriteSnapshotFile(tmp, lsn, snapshot, options_.fsync);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = IoError("rename", tmp, errno);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (options_.fsync) SLUICE_RETURN_IF_ERROR(SyncDir(options_.dir));

  // The new snapshot is durable: older snapshots and fully covered segments can go. Leftovers
  // from a crash here are recognised and removed by the next Replay.
  std::error_code ec;
  for (fs::directory_iterator it(options_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto old = ParseLsnName(it->path().filename().string(), kSnapshotPrefix, kSnapshotSuffix);
    if (old && *old < lsn) ::unlink(it->path().c_str());
  }
  std::vector<Segment> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t covered = 0;
    while (covered + 1 < segments_.size() && segments_[covered + 1].first_lsn <= lsn + 1) {
      ++covered;
    }
    doomed.assign(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(covered));
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(covered));
    snapshot_lsn_ = lsn;
    CoverBytesLocked(lsn);
  }
  for (const Segment& segment : doomed) ::unlink(segment.path.c_str());
  return Status::Ok();
}

void WriteAheadLog::AddRecordBytesLocked(uint64_t lsn, uint64_t frame_bytes) {
  appended_bytes_ += frame_bytes;
  const uint64_t last_mark = byte_marks_.empty() ? covered_bytes_ : byte_marks_.back().second;
  if (appended_bytes_ - last_mark >= kByteMarkSpacing) {
    byte_marks_.emplace_back(lsn, appended_bytes_);
  }
}

void WriteAheadLog::CoverBytesLocked(uint64_t lsn) {
  if (lsn >= last_lsn_.load()) {
    covered_bytes_ = appended_bytes_;
    byte_marks_.clear();
    return;
  }
  while (!byte_marks_.empty() && byte_marks_.front().first <= lsn) {
    covered_bytes_ = std::max(covered_bytes_, byte_marks_.front().second);
    byte_marks_.pop_front();
  }
}

uint64_t WriteAheadLog::LastLsn() const { return last_lsn_.load(); }

uint64_t WriteAheadLog::DurableLsn() const { return durable_lsn_.load(); }

uint64_t WriteAheadLog::BytesSinceSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return appended_bytes_ - covered_bytes_;
}

WalStats WriteAheadLog::Stats() const {
  return {stat_records_.load(std::memory_order_relaxed),
          stat_bytes_.load(std::memory_order_relaxed),
          stat_fsyncs_.load(std::memory_order_relaxed)};
}

Status WriteAheadLog::Close() {
  std::unique_lock<std::mutex> lock(mu_);
  while (flushing_) cv_.wait(lock);
  if (state_ == State::kClosed) return error_;
  const bool was_open = state_ == State::kOpen;
  // Closed first, so appends racing with the final flush fail instead of being left behind.
  state_ = State::kClosed;
  Status s = error_;
  if (was_open && s.ok() && fd_ >= 0) s = Flush(lock, /*sync=*/true);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (lock_fd_ >= 0) ::close(lock_fd_);  // Releases the flock.
  lock_fd_ = -1;
  cv_.notify_all();
  return s;
}

}  // namespace sluice::dataflow
