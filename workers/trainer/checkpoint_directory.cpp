#include "workers/trainer/checkpoint_directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace sluice::trainer {
namespace {

namespace fs = std::filesystem;

constexpr const char kPrefix[] = "step-";

std::string TempName(int64_t step) { return "." + CheckpointName(step) + ".tmp"; }

Status FsyncPath(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Internal("open " + path.string() + " for fsync failed");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Internal("fsync " + path.string() + " failed");
  return Status::Ok();
}

}  // namespace

std::string CheckpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%08lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> ParseCheckpointName(const std::string& name) {
  constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  if (name.size() < kPrefixLen + 8 || name.compare(0, kPrefixLen, kPrefix) != 0) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = kPrefixLen; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

Result<std::vector<int64_t>> ListCheckpoints(const std::string& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return steps;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory()) continue;
    if (std::optional<int64_t> s = ParseCheckpointName(e.path().filename().string())) {
      steps.push_back(*s);
    }
  }
  if (ec) return Status::Internal("listing " + dir + ": " + ec.message());
  std::sort(steps.begin(), steps.end());
  return steps;
}

Result<std::string> BeginCheckpoint(const std::string& dir, int64_t step) {
  std::error_code ec;
  const fs::path tmp = fs::path(dir) / TempName(step);
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status::Internal("creating " + tmp.string() + ": " + ec.message());
  return tmp.string();
}

Status CommitCheckpoint(const std::string& dir, int64_t step, int keep) {
  std::error_code ec;
  const fs::path tmp = fs::path(dir) / TempName(step);
  const fs::path final_path = fs::path(dir) / CheckpointName(step);
  for (const fs::directory_entry& e : fs::directory_iterator(tmp, ec)) {
    if (e.is_regular_file()) SLUICE_RETURN_IF_ERROR(FsyncPath(e.path(), false));
  }
  if (ec) return Status::Internal("listing " + tmp.string() + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(FsyncPath(tmp, true));
  fs::remove_all(final_path, ec);
  fs::rename(tmp, final_path, ec);
  if (ec) return Status::Internal("renaming " + tmp.string() + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(FsyncPath(dir, true));

  Result<std::vector<int64_t>> steps = ListCheckpoints(dir);
  if (!steps.ok()) return steps.status();
  const size_t keep_n = static_cast<size_t>(std::max(keep, 1));
  for (size_t i = 0; i + keep_n < steps->size(); ++i) {
    fs::remove_all(fs::path(dir) / CheckpointName((*steps)[i]), ec);
  }
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 5 && name[0] == '.' && name.ends_with(".tmp")) fs::remove_all(e.path(), ec);
  }
  return Status::Ok();
}

}  // namespace sluice::trainer
