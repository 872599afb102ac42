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

}  // namespace

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
