#include "localcluster/cli/state_layout.h"

#include <filesystem>
#include <utility>

namespace sluice::cli {

StateLayout::StateLayout(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string StateLayout::LogFile(std::string_view component) const {
  return LogsDir() + "/" + std::string(component) + ".log";
}

std::string StateLayout::PidFile(std::string_view component) const {
  return RunDir() + "/" + std::string(component) + ".pid";
}

std::string StateLayout::ExperimentDir(std::string_view name) const {
  return root_ + "/experiments/" + std::string(name);
}

std::string StateLayout::ProgressLog(std::string_view name) const {
  return ExperimentDir(name) + "/progress.jsonl";
}

Result<std::string> DefaultStateDir(const config::Environment& env) {
  auto it = env.find("HOME");
  if (it == env.end() || it->second.empty()) {
    return Status::InvalidArgument(
        "flag --state-dir: HOME is not set, so there is no default ($HOME/.sluice); pass "
        "--state-dir DIR");
  }
  std::string home = it->second;
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  return home + "/.sluice";
}

std::string AbsolutePath(const std::string& dir, const std::string& cwd) {
  std::filesystem::path path = std::filesystem::path(cwd) / dir;  // An absolute dir wins.
  std::string out = path.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace sluice::cli
