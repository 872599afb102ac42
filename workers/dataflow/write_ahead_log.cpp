// WriteAheadLog (write_ahead_log.h): opening and locking the directory, appending records,
// group commit (one flusher writes and fdatasyncs everything appended so far), rolling segments,
// the bytes-since-snapshot accounting, and closing. Replay is in wal_replay.cpp, WriteSnapshot
// in wal_snapshot_file.cpp, the file I/O they share in wal_file_io.h.
#include "workers/dataflow/write_ahead_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "common/wire/encoder.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"
#include "workers/dataflow/wal_file_io.h"

namespace sluice::dataflow {

using wal_internal::DataSync;
using wal_internal::IoError;
using wal_internal::kSegmentPrefix;
using wal_internal::kSegmentSuffix;
using wal_internal::kSnapshotPrefix;
using wal_internal::kSnapshotSuffix;
using wal_internal::LsnName;
using wal_internal::SyncDir;
using wal_internal::WriteAll;

namespace {

namespace fs = std::filesystem;
// Real time for I/O timeouts and latencies; decisions read a sluice::Clock (common/clock.h).
using Steady = std::chrono::steady_clock;

// Appends write buffered records (without fsync) once this much is pending, and wait for the
// flusher once kMaxPendingBytes is pending, so memory stays bounded when nobody waits.
constexpr size_t kWriteBehindBytes = size_t{1} << 20;
constexpr size_t kMaxPendingBytes = size_t{64} << 20;
// BytesSinceSnapshot may overcount by less than this.
constexpr uint64_t kByteMarkSpacing = 4096;

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
  const Steady::time_point start = Steady::now();
  SLUICE_RETURN_IF_ERROR(DataSync(fd_, active_path_));
  dirty_ = false;
  stat_fsyncs_.fetch_add(1, std::memory_order_relaxed);
  if (fsyncs_total_ != nullptr) fsyncs_total_->Inc();
  if (fsync_seconds_ != nullptr) {
    fsync_seconds_->Observe(std::chrono::duration<double>(Steady::now() - start).count());
  }
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
