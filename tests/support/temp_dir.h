// Test helper: a fresh directory under $TMPDIR (or /tmp), removed with everything in it when the
// object goes. mkdtemp makes the name unique across processes and threads, so parallel test
// programs never share one.
//
//   TempDir dir("sluice_wal_test");
//   dir.path()                        the directory (std::filesystem::path)
//   dir.str()                         the same as a string, for "dir.str() + "/file""
//   dir.File("w.bin")                 a path in it, as a string
//   dir.Write("a/b.txt", "text")      writes a file (parents made) and returns its path
//
// Thread safety: const members may be called from any thread; the object is not copyable.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "common/check.h"

namespace sluice::test_support {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "sluice_test") {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" +
                          std::string(prefix) + "_" + std::to_string(::getpid()) + "_XXXXXX";
    SLUICE_CHECK(::mkdtemp(pattern.data()) != nullptr);
    str_ = pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::string& str() const { return str_; }
  // The path of `name` in it, as a string (nothing is created).
  std::string File(std::string_view name) const { return (path_ / name).string(); }

  // Writes `contents` byte for byte to `name` (relative; parent directories are made), mode
  // 0755 when `executable`; returns the file's path.
  std::filesystem::path Write(std::string_view name, std::string_view contents,
                              bool executable = false) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (executable) ::chmod(file.c_str(), 0755);
    return file;
  }

 private:
  std::filesystem::path path_;
  std::string str_;
};

}  // namespace sluice::test_support
