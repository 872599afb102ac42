// The snapshot file of a write-ahead log (`snapshot-<LSN>.bin`): frames kSnapshotBeginFrameType
// (u64 lsn, u64 total bytes), kSnapshotChunkFrameType (up to 4 MiB of the snapshot each),
// kSnapshotEndFrameType (u64 lsn, u64 total bytes); write_ahead_log.h has the whole layout.
// Internal to the log's implementation (wal_replay.cpp reads them, WriteSnapshot writes them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::dataflow::wal_internal {

// Reads and validates a snapshot file written by WriteSnapshotFile; returns its contents.
// Corruption for anything malformed; Internal for I/O errors. Reads frame by frame, so memory
// is the snapshot plus one chunk.
Result<std::string> ReadSnapshotFile(const std::string& path, uint64_t lsn);

// Replaces `path` with `data` as the snapshot at `lsn`, atomically and durably
// (common/file/atomic_file.h: synced, renamed into place, directory synced).
Status WriteSnapshotFile(const std::string& path, uint64_t lsn, std::string_view data);

}  // namespace sluice::dataflow::wal_internal
