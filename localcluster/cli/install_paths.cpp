#include "localcluster/cli/install_paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "localcluster/cli/state_layout.h"

namespace sluice::cli {

Result<std::string> SelfExecutableDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) {
    return Status::Internal(std::string("readlink /proc/self/exe: ") + std::strerror(errno) +
                            " (pass --bin-dir)");
  }
  return std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path().string();
}

std::vector<std::string> ClusterConfigCandidates(const std::string& bin_dir,
                                                 const std::string& cwd) {
  return {AbsolutePath(bin_dir + "/../../examples/local-cluster.yaml", cwd),
          AbsolutePath("examples/local-cluster.yaml", cwd)};
}

Result<std::string> FindClusterConfig(const std::string& explicit_path, const std::string& bin_dir,
                                      const std::string& cwd) {
  std::error_code ec;
  if (!explicit_path.empty()) {
    const std::string path = AbsolutePath(explicit_path, cwd);
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::NotFound("flag --config: " + path + " does not exist");
    }
    return path;
  }
  std::string looked;
  for (const std::string& candidate : ClusterConfigCandidates(bin_dir, cwd)) {
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate;
  }
  return Status::NotFound("no cluster description: looked for " + looked + "; pass --config FILE");
}

std::string CurrentDirectory() {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? std::string("/") : cwd.string();
}

}  // namespace sluice::cli
