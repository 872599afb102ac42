#include "common/file/file_system.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sluice::file {
namespace {

Status Errno(std::string_view what, const std::string& path, int err) {
  std::string msg = "cannot " + std::string(what) + " " + path + ": " + std::strerror(err);
  if (err == EEXIST) return Status::AlreadyExists(std::move(msg));
  if (err == ENOENT) return Status::NotFound(std::move(msg));
  return Status::Internal(std::move(msg));
}

// fsync(2), retried on EINTR; EINVAL (a file that cannot be synced) is success.
int SyncFd(int fd) {
  int rc;
  while ((rc = ::fsync(fd)) != 0 && errno == EINTR) {
  }
  return rc != 0 && errno == EINVAL ? 0 : rc;
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status::Internal("cannot write " + path_ + ": it is closed");
    while (!data.empty()) {
      // Linux writes at most about 2 GiB at once.
      const ssize_t n = ::write(fd_, data.data(), std::min<size_t>(data.size(), size_t{1} << 30));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::Internal("cannot sync " + path_ + ": it is closed");
    return SyncFd(fd_) == 0 ? Status::Ok() : Errno("sync", path_, errno);
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? Status::Ok() : Errno("close", path_, errno);
  }

 private:
  int fd_;
  std::string path_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path, mode_t mode) override {
    // Created owner-only, then given its mode: fchmod is not reduced by the umask, and a secret
    // (mode 0600) is never readable by others, not even briefly.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Errno("create", path, errno);
    if (::fchmod(fd, mode) != 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return Errno("set the mode of", path, err);
    }
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) == 0) return Status::Ok();
    return Errno("rename", from + " to " + to, errno);
  }

  Status LinkNoReplace(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) == 0) return Status::Ok();
    if (errno == EEXIST) return Errno("link", from + " to " + to, errno);
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
      return Status::Ok();
    }
    return Errno("rename", from + " to " + to, errno);
  }

  Status SyncFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("open", path, errno);
    const int rc = SyncFd(fd);
    const int err = errno;
    ::close(fd);
    return rc == 0 ? Status::Ok() : Errno("sync", path, err);
  }

  Status SyncDirectory(const std::string& dir) override {
    const std::string name = dir.empty() ? "." : dir;
    const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open the directory", name, errno);
    const int rc = SyncFd(fd);
    const int err = errno;
    ::close(fd);
    return rc == 0 ? Status::Ok() : Errno("sync the directory", name, err);
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) return Status::Ok();
    return Errno("remove", path, errno);
  }
};

}  // namespace

FileSystem& DefaultFileSystem() {
  static PosixFileSystem* fs = new PosixFileSystem();  // Never destroyed: usable at exit.
  return *fs;
}

}  // namespace sluice::file
