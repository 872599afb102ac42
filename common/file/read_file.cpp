#include "common/file/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sluice::file {

namespace {

Status ReadError(std::string_view what, const std::string& path, int err) {
  std::string message = "cannot " + std::string(what) + " " + path + ": " + std::strerror(err);
  return err == ENOENT ? Status::NotFound(std::move(message))
                       : Status::Internal(std::move(message));
}

}  // namespace

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ReadError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ReadError("stat", path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return ReadError("read", path, EISDIR);
  }
  // The size is a hint: the read goes on to end of file.
  std::string data(static_cast<size_t>(st.st_size > 0 ? st.st_size : 0) + 1, '\0');
  size_t used = 0;
  for (;;) {
    if (used == data.size()) data.resize(data.size() * 2 + 4096);
    const ssize_t n = ::read(fd, data.data() + used, data.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ReadError("read", path, err);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(used);
  return data;
}

}  // namespace sluice::file
