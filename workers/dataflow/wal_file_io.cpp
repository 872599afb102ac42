// Durable file I/O of the write-ahead log (wal_file_io.h): names, retried reads and writes,
// syncs, and the errors that name the file.
#include "workers/dataflow/wal_file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/file/file_system.h"

namespace sluice::dataflow::wal_internal {
namespace {

constexpr size_t kLsnDigits = 20;

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

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

Status SyncDir(const std::string& dir) {
  // The one directory sync (EINVAL counts as success there); named as the log's own errors are.
  return file::DefaultFileSystem().SyncDirectory(dir).WithContext("write-ahead log");
}

Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  Status s = DataSync(fd, path);
  ::close(fd);
  return s;
}

Status Corrupt(const std::string& path, uint64_t offset, std::string_view what, std::string field) {
  return Status::Corruption("write-ahead log file " + path + " at byte offset " +
                                std::to_string(offset) + ": " + std::string(what),
                            std::move(field));
}

}  // namespace sluice::dataflow::wal_internal
