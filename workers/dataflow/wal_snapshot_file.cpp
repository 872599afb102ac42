// Snapshots of the write-ahead log: the snapshot file format (wal_snapshot_file.h), and
// WriteAheadLog::WriteSnapshot, which stores one durably (temp file, rename, directory fsync)
// and then deletes the older snapshots and the segments it covers.
#include "workers/dataflow/wal_snapshot_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/file/atomic_file.h"
#include "common/wire/encoder.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"
#include "workers/dataflow/wal_file_io.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {
namespace wal_internal {
namespace {

constexpr size_t kSnapshotChunkBytes = size_t{4} << 20;

}  // namespace

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

namespace {

// The frames of the snapshot at `lsn` holding `data`, appended to `out`.
Status AppendSnapshotFrames(file::WritableFile& out, uint64_t lsn, std::string_view data) {
  std::string frame;
  std::string marker;
  wire::Encoder encoder(&marker);
  encoder.PutU64(lsn);
  encoder.PutU64(data.size());
  SLUICE_RETURN_IF_ERROR(wire::AppendFrame(kSnapshotBeginFrameType, marker, &frame));
  SLUICE_RETURN_IF_ERROR(out.Append(frame));
  for (size_t offset = 0; offset < data.size(); offset += kSnapshotChunkBytes) {
    frame.clear();
    SLUICE_RETURN_IF_ERROR(wire::AppendFrame(kSnapshotChunkFrameType,
                                             data.substr(offset, kSnapshotChunkBytes), &frame));
    SLUICE_RETURN_IF_ERROR(out.Append(frame));
  }
  frame.clear();
  SLUICE_RETURN_IF_ERROR(wire::AppendFrame(kSnapshotEndFrameType, marker, &frame));
  return out.Append(frame);
}

}  // namespace

Status WriteSnapshotFile(const std::string& path, uint64_t lsn, std::string_view data) {
  return file::WriteFileAtomic(
             path, 0644,
             [lsn, data](file::WritableFile& out) { return AppendSnapshotFrames(out, lsn, data); })
      .WithContext("write-ahead log snapshot");
}

}  // namespace wal_internal

using wal_internal::kSnapshotPrefix;
using wal_internal::kSnapshotSuffix;
using wal_internal::ParseLsnName;
using wal_internal::WriteSnapshotFile;

namespace {

namespace fs = std::filesystem;

}  // namespace

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

  // Always synced, even with fsync off: the segments it covers are deleted next.
  SLUICE_RETURN_IF_ERROR(WriteSnapshotFile(SnapshotPath(lsn), lsn, snapshot));

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

}  // namespace sluice::dataflow
