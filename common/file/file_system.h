// The file operations that durable writes need, behind an interface so that tests can inject
// faults (a full disk, a failed fsync, a crash between two steps), as LevelDB's Env does.
// DefaultFileSystem() is the POSIX implementation every program uses; tests wrap it.
//
// Paths are plain strings, absolute or relative to the working directory. Errors are Status
// values whose messages name the operation, the path and the system's reason.
//
// Thread safety: DefaultFileSystem() may be used from any thread. A WritableFile belongs to the
// thread that writes it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::file {

// A new file being written. The destructor closes it if Close() was not called (its errors are
// then lost: writers call Close()).
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Appends all of `data` (short writes and EINTR are retried).
  virtual Status Append(std::string_view data) = 0;
  // Flushes the file's data and size to the device (fsync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates `path`, which must not exist (AlreadyExists if it does), with exactly `mode`
  // (not reduced by the umask) from the moment it exists, and opens it for writing.
  virtual Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path,
                                                           mode_t mode) = 0;
  // rename(2): replaces `to` if it is a file or an empty directory.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Gives the file `from` the second name `to` without ever replacing `to`: AlreadyExists when
  // `to` exists. Filesystems without hard links fall back to renameat2(RENAME_NOREPLACE), which
  // moves `from` instead.
  virtual Status LinkNoReplace(const std::string& from, const std::string& to) = 0;
  // Flushes an existing file (fsync).
  virtual Status SyncFile(const std::string& path) = 0;
  // Makes the directory's entries (a rename or a new file in it) durable. Filesystems that
  // cannot sync a directory (EINVAL) count as success: there is nothing more to do.
  virtual Status SyncDirectory(const std::string& dir) = 0;
  // Removes the file `path`; a missing file is not an error.
  virtual Status RemoveFile(const std::string& path) = 0;
};

// The POSIX file system. Lives for the whole program.
FileSystem& DefaultFileSystem();

}  // namespace sluice::file
