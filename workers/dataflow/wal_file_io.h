// The files of a write-ahead log directory and the I/O the log does on them: their names
// (`wal-<LSN>.log`, `snapshot-<LSN>.bin`, 20-digit LSNs), retried writes and reads, fdatasync of
// files and fsync of directories, and errors that name the file (write_ahead_log.h describes the
// layout). Shared by write_ahead_log.cpp, wal_replay.cpp and wal_snapshot_file.cpp; internal to
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/wire/format.h"
#include "common/wire/frame.h"

namespace sluice::dataflow::wal_internal {

inline constexpr std::string_view kSegmentPrefix = "wal-";
inline constexpr std::string_view kSegmentSuffix = ".log";
inline constexpr std::string_view kSnapshotPrefix = "snapshot-";
inline constexpr std::string_view kSnapshotSuffix = ".bin";
inline constexpr std::string_view kTempSuffix = ".tmp";

// Frame reader limits for log files: any frame the wire format allows.
inline const wire::FrameReaderOptions kReadAll{wire::kMaxFramePayloadBytes};

// Internal, naming the operation, the file and the errno.
Status IoError(std::string_view what, const std::string& path, int err);

// `<prefix><lsn as 20 digits><suffix>`.
std::string LsnName(std::string_view prefix, uint64_t lsn, std::string_view suffix);
// The LSN in a name `<prefix><20 digits><suffix>`, or nullopt for any other name.
std::optional<uint64_t> ParseLsnName(std::string_view name, std::string_view prefix,
                                     std::string_view suffix);

// Little-endian loads, as the wire format stores integers.
inline uint64_t LoadU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline uint32_t LoadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Writes all n bytes (retrying short writes and EINTR).
Status WriteAll(int fd, const char* data, size_t n, const std::string& path);
// Reads exactly n bytes at offset; Internal when the file is shorter.
Status PreadAll(int fd, char* data, size_t n, uint64_t offset, const std::string& path);
Status DataSync(int fd, const std::string& path);
// Makes creations, renames and deletions in dir durable. EINVAL (a filesystem that cannot sync
// directories) is not an error.
Status SyncDir(const std::string& dir);
// fdatasyncs the file at path.
Status SyncPath(const std::string& path);

// Corruption naming the file and the byte offset of the damage.
Status Corrupt(const std::string& path, uint64_t offset, std::string_view what,
               std::string field = "wal");

}  // namespace sluice::dataflow::wal_internal
