// WriteAheadLog: the dataflow service's durable record of every state change (accepted groups,
// lease changes, batch acks, version announcements, curator and replay updates), so that a
// `kill -9` at any moment loses nothing that was acknowledged. Generic: a record is a caller-chosen
// u32 type and opaque payload bytes; the service owns the meaning of both.
//
// On disk (all in WalOptions::dir, normally a PVC):
//  - Segments `wal-<first LSN, 20 digits>.log`: back-to-back wire frames (docs/wire-format.md,
//    common/wire/frame.h) of type kWalRecordFrameType whose payload is `u64 lsn, u32 type,
//    payload bytes` (little-endian). Frame CRCs (CRC32C) cover header and payload. LSNs start at
//    1 and are consecutive across segments; a segment is closed after the first record that
//    takes it to WalOptions::segment_bytes or more.
//  - Snapshot `snapshot-<LSN, 20 digits>.bin`: frames kSnapshotBeginFrameType (u64 lsn, u64 total
//    bytes), kSnapshotChunkFrameType (up to 4 MiB of the snapshot each), kSnapshotEndFrameType
//    (u64 lsn, u64 total bytes). Written as `<name>.tmp`, fsynced, renamed, directory fsynced.
//  - `LOCK`: flock()ed while a WriteAheadLog has the directory open, so two processes (e.g. an
//    old and a new pod on one PVC) never write the same log.
//
// Lifecycle: Open, then Replay exactly once (also for an empty directory), then Append /
// WaitDurable / WriteSnapshot from any threads, then Close (or destroy).
//
// Caller protocol (what makes replay and snapshots reproduce the state):
//  - Append a record and apply its change to the in-memory state under one lock, so LSN order is
//    the order changes were applied, and replay (which applies them in LSN order) rebuilds it.
//  - Make nothing externally visible (a reply to a worker, a served batch) before WaitDurable of
//    the LSN it depends on. Durability is a prefix, so waiting on a later LSN covers all earlier
//    ones. Wait outside the state lock so concurrent requests share fsyncs.
//  - Snapshot: serialise the state and read LastLsn() under that same lock, then call
//    WriteSnapshot(lsn, bytes) outside it.
//
// Durability guarantees:
//  - Append assigns the next LSN and buffers the record; it returns before the record is on disk.
//  - WaitDurable(lsn) returns OK only once every record <= lsn has been written to its segment and
//    fdatasync()ed (and any segment file created since, with its directory entry, fsynced). After
//    that, a crash of the process or the machine cannot lose those records. With
//    WalOptions::fsync == false it means only "handed to the kernel" (survives kill -9, not
//    power loss).
//  - Records after the last fsync may be lost in a crash, always as a suffix: recovery never
//    yields record N+1 without record N.
//  - WriteSnapshot(lsn, bytes) returns OK once the snapshot file and its directory entry are
//    fsynced; recovery then starts from it. It first waits until records <= lsn are durable.
//  - Group commit: one leader thread at a time writes everything appended so far and fdatasyncs
//    it; the leader is whichever WaitDurable caller finds no write in progress (no background
//    thread). Others wait and are released by the leader's fsync if it covered their LSN.
//    WalOptions::group_commit_delay makes the leader wait that long first, gathering more records
//    per fsync. Appends also write (without fsync) once 1 MiB is buffered, to bound memory.
//  - Fail-stop: the first failed write, fsync or segment creation is sticky. Every later Append
//    and WaitDurable (for an LSN not already durable) returns it; the in-memory state of the
//    caller is then ahead of the disk and the process should exit and recover from the log.
//
// Recovery (Replay): the newest snapshot that validates is handed over (an unreadable newer one is
// set aside as `<name>.corrupt` when an older one works), then every record with a larger LSN, in
// LSN order. A damaged tail of the last segment (a partial frame, or a bad frame with no valid
// record after it, which is what a crash mid-write leaves) is cut off and counted in ReplayStats.
// Anything else (a bad frame followed by valid records, damage in an earlier segment, an LSN gap,
// a missing segment) is Corruption naming the file and byte offset; nothing is repaired then.
//
// Units: sizes in bytes; LSNs count records from 1 (0 means "none").
// Ownership: the log owns its files and descriptors; the registry must outlive it.
// Thread safety: Append, WaitDurable, AppendDurable, WriteSnapshot, LastLsn, DurableLsn,
// BytesSinceSnapshot, Stats and Close may be called from any threads concurrently. Open and
// Replay are not concurrent with anything else on the same log.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics/registry.h"
#include "common/status.h"

namespace sluice::dataflow {

// Frame types (the wire format's `type` field) used in WAL files.
inline constexpr uint16_t kWalRecordFrameType = 0x0201;
inline constexpr uint16_t kSnapshotBeginFrameType = 0x0202;
inline constexpr uint16_t kSnapshotChunkFrameType = 0x0203;
inline constexpr uint16_t kSnapshotEndFrameType = 0x0204;

// Bytes a record adds to its segment beyond its payload: frame header and trailer, lsn, type.
inline constexpr size_t kWalRecordOverheadBytes = 24 + 12;
// Largest payload one record may carry (the frame limit less the lsn and type).
inline constexpr size_t kWalMaxPayloadBytes = (size_t{1} << 30) - 12;

struct WalOptions {
  std::string dir;    // Created if missing; holds the segments, the snapshot and LOCK.
  bool fsync = true;  // false only for tests and benchmarks of the non-durable path.
  // Extra wait before each fsync to gather more appends into it. 0: fsync as soon as the previous
  // one finishes (concurrent appenders still share fsyncs).
  std::chrono::microseconds group_commit_delay{0};
  uint64_t segment_bytes = uint64_t{64} << 20;  // Roll to a new segment past this; > 0.
};

struct WalRecord {
  uint64_t lsn = 0;
  uint32_t type = 0;
  std::string payload;
};

struct ReplayStats {
  bool has_snapshot = false;
  uint64_t snapshot_lsn = 0;       // The snapshot handed over; 0 when none.
  uint64_t snapshot_bytes = 0;     // Its size as handed over.
  uint64_t corrupt_snapshots = 0;  // Newer snapshots that failed validation and were set aside.
  uint64_t segments = 0;           // Segment files read.
  uint64_t records = 0;            // Records handed to on_record.
  uint64_t record_bytes = 0;       // Their size on disk (frames).
  uint64_t skipped_records = 0;    // Valid records read but already covered by the snapshot.
  uint64_t truncated_bytes = 0;    // Damaged tail cut off the last segment (0: clean).
  std::string truncated_file;      // The segment that was cut, when truncated_bytes > 0.
  uint64_t last_lsn = 0;           // The next Append gets last_lsn + 1.
};

// Counters since Open (also exported as metrics when a registry is given).
struct WalStats {
  uint64_t records = 0;  // Records appended.
  uint64_t bytes = 0;    // Bytes written to segments.
  uint64_t fsyncs = 0;   // fdatasync calls on segments.
};

class WriteAheadLog {
 public:
  // Creates dir if needed and locks it. Unavailable when another WriteAheadLog (in any process)
  // has it open; InvalidArgument for bad options. Nothing is read until Replay.
  static Result<std::unique_ptr<WriteAheadLog>> Open(const WalOptions& options,
                                                     metrics::Registry* registry);

  WriteAheadLog(const WriteAheadLog&) = delete;
  WriteAheadLog& operator=(const WriteAheadLog&) = delete;
  ~WriteAheadLog();  // Close(), ignoring its status.

  // Recovery; must be called exactly once, after Open and before anything else. Calls
  // on_snapshot(lsn, bytes) with the newest valid snapshot (not at all when there is none), then
  // on_record for every record with a larger LSN, in order. The first non-OK status from a
  // callback stops the replay and is returned. Any error leaves the log unusable (every later
  // call fails); the service should exit. Views passed to callbacks are valid during the call.
  Result<ReplayStats> Replay(
      const std::function<Status(uint64_t snapshot_lsn, std::string_view snapshot)>& on_snapshot,
      const std::function<Status(const WalRecord&)>& on_record);

  // Assigns the next LSN to the record and buffers it; returns the LSN. Not yet durable: call
  // WaitDurable. LSNs follow the order in which Append calls take the log's lock, and the file
  // order (hence replay order) is LSN order. TooLarge for a payload over kWalMaxPayloadBytes;
  // Unavailable after Close; the sticky I/O error after a failure.
  Result<uint64_t> Append(uint32_t type, std::string_view payload);
  // Blocks until every record <= lsn is durable (see the header comment). OK at once for an LSN
  // already durable, even after a later I/O error. InvalidArgument for an LSN never assigned.
  Status WaitDurable(uint64_t lsn);
  // Append then WaitDurable.
  Result<uint64_t> AppendDurable(uint32_t type, std::string_view payload);

  // Stores a snapshot of the caller's state that reflects exactly the records <= lsn; the caller
  // guarantees no record <= lsn is still being appended (take the snapshot's state and LastLsn()
  // under the same lock that orders Append with state changes). Waits until records <= lsn are
  // durable, writes and fsyncs the snapshot (temp file, rename, directory fsync), then deletes
  // older snapshots and every closed segment whose records are all <= lsn. One snapshot is
  // written at a time (concurrent calls queue). InvalidArgument when lsn > LastLsn() or lsn is
  // below the current snapshot's. An error writing the snapshot leaves the log usable; the
  // previous snapshot and the segments stay.
  Status WriteSnapshot(uint64_t lsn, std::string_view snapshot);

  uint64_t LastLsn() const;     // The newest LSN assigned (0: none).
  uint64_t DurableLsn() const;  // Every record <= this is durable.
  // Bytes of log records newer than the current snapshot, which a restart would replay (may
  // overcount by under 4 KiB). The service snapshots when this passes a threshold.
  uint64_t BytesSinceSnapshot() const;
  WalStats Stats() const;

  // Writes and fsyncs everything appended, closes the files and releases the directory lock.
  // Later Appends fail with Unavailable. Returns the sticky error if the log has failed.
  // Idempotent.
  Status Close();

 private:
  enum class State { kNew, kReplaying, kOpen, kClosed };
  struct Segment {
    uint64_t first_lsn = 0;
    std::string path;
  };

  WriteAheadLog(WalOptions options, int lock_fd, metrics::Registry* registry);

  Result<ReplayStats> ReplayFiles(
      const std::function<Status(uint64_t, std::string_view)>& on_snapshot,
      const std::function<Status(const WalRecord&)>& on_record);
  // Writes the buffered records (and fsyncs when sync) as the single flusher; called with mu_
  // held through `lock`, which it releases during I/O.
  Status Flush(std::unique_lock<std::mutex>& lock, bool sync);
  // Flusher-only: writes batch_ (records from first_lsn on) to the active segment, rolling to a
  // new one after the record that takes a segment to segment_bytes.
  Status WriteBatch(uint64_t first_lsn);
  // Flusher-only: fsyncs the active segment, then creates and switches to wal-<first_lsn>.log.
  Status RollSegment(uint64_t first_lsn);
  // Flusher-only: fdatasyncs the active segment if anything was written since the last one.
  Status SyncActiveSegment();
  // OK when appends and snapshots are allowed; else why not. mu_ held.
  Status WritableLocked() const;
  // Records that the bytes of records <= lsn are covered by a snapshot. mu_ held.
  void CoverBytesLocked(uint64_t lsn);
  // Counts a record of frame_bytes with this lsn as uncovered log. mu_ held.
  void AddRecordBytesLocked(uint64_t lsn, uint64_t frame_bytes);
  std::string SegmentPath(uint64_t first_lsn) const;
  std::string SnapshotPath(uint64_t lsn) const;

  const WalOptions options_;
  int lock_fd_ = -1;

  metrics::Histogram* fsync_seconds_ = nullptr;
  metrics::Counter* bytes_total_ = nullptr;
  metrics::Counter* records_total_ = nullptr;
  metrics::Counter* fsyncs_total_ = nullptr;
  std::atomic<uint64_t> stat_records_{0};
  std::atomic<uint64_t> stat_bytes_{0};
  std::atomic<uint64_t> stat_fsyncs_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // Flush finished, or the state changed.
  State state_ = State::kNew;
  Status error_;                      // Sticky first I/O error (or the replay failure).
  bool flushing_ = false;             // A flusher owns batch_, fd_ and segment_size_.
  std::string pending_;               // Encoded frames of records (written_lsn_, last_lsn_].
  std::vector<size_t> pending_ends_;  // End offset in pending_ of each of those records.
  std::atomic<uint64_t> last_lsn_{0};
  std::atomic<uint64_t> written_lsn_{0};  // Handed to the kernel.
  std::atomic<uint64_t> durable_lsn_{0};
  std::vector<Segment> segments_;  // Ascending; back() is the active one.
  uint64_t snapshot_lsn_ = 0;
  // Bytes-since-snapshot accounting: cumulative frame bytes of records newer than the replayed
  // snapshot, the part covered by later snapshots, and (lsn, cumulative bytes) marks at least
  // 4 KiB apart to find the covered part of a snapshot's LSN.
  uint64_t appended_bytes_ = 0;
  uint64_t covered_bytes_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> byte_marks_;

  // Owned by the flusher (flushing_ true), or by whoever holds mu_ while none is flushing.
  int fd_ = -1;  // The active segment, opened for appending.
  std::string active_path_;
  uint64_t segment_size_ = 0;
  bool dirty_ = false;  // Written since its last fdatasync.
  std::string batch_;
  std::vector<size_t> batch_ends_;

  std::mutex snapshot_mu_;  // One WriteSnapshot at a time.
};

}  // namespace sluice::dataflow
