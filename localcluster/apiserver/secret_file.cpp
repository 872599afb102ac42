#include "localcluster/apiserver/secret_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxReadBytes = 1u << 20;

std::string Errno(int err) { return std::strerror(err); }

// Makes a rename in `dir` durable. Best effort: some filesystems refuse fsync on directories.
void SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// Writes `data` to a new temporary file beside `path` with mode `mode`, flushed to disk; returns
// its name. The caller renames or removes it.
Result<std::string> WriteTemp(const fs::path& path, std::string_view data, mode_t mode) {
  std::string tmp = path.string() + ".tmp-XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // Created 0600.
  if (fd < 0) {
    return Status::Internal("cannot create a temporary file for " + path.string() + ": " +
                            Errno(errno));
  }
  auto fail = [&](const char* step) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::Internal("cannot " + std::string(step) + " " + tmp + " (for " + path.string() +
                            "): " + Errno(err));
  };
  if (::fchmod(fd, mode) != 0) return fail("set the mode of");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("flush");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::Internal("cannot close " + tmp + ": " + Errno(err));
  }
  return tmp;
}

}  // namespace

Status WriteFileAtomic(const fs::path& path, std::string_view data, mode_t mode) {
  SLUICE_ASSIGN_OR_RETURN(const std::string tmp, WriteTemp(path, data, mode));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::Internal("cannot rename " + tmp + " to " + path.string() + ": " + Errno(err));
  }
  SyncDirectory(path.parent_path());
  return Status::Ok();
}

Result<bool> WriteFileIfAbsent(const fs::path& path, std::string_view data, mode_t mode) {
  SLUICE_ASSIGN_OR_RETURN(const std::string tmp, WriteTemp(path, data, mode));
  // link() fails with EEXIST instead of replacing; renameat2(RENAME_NOREPLACE) is the fallback
  // for filesystems without hard links.
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = rc == 0 ? 0 : errno;
  if (rc != 0 && err != EEXIST) {
    rc = ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    err = rc == 0 ? 0 : errno;
  }
  ::unlink(tmp.c_str());  // After a successful link the target keeps the content.
  if (err == EEXIST) return false;
  if (rc != 0) {
    return Status::Internal("cannot create " + path.string() + " from " + tmp + ": " + Errno(err));
  }
  SyncDirectory(path.parent_path());
  return true;
}

Result<std::string> ReadSmallFile(const fs::path& path, std::string_view what) {
  const std::string where = std::string(what) + " " + path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(where + " does not exist");
    return Status::Internal("cannot open " + where + ": " + Errno(err));
  }
  std::string out;
  std::vector<char> buf(16384);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Status::Internal("cannot read " + where + ": " + Errno(err));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
    if (out.size() > kMaxReadBytes) {
      ::close(fd);
      return Status::TooLarge(where + " is larger than " + std::to_string(kMaxReadBytes) +
                              " bytes");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace sluice::apiserver
