// Hosts-file name resolution, the hook the local cluster uses for Service and pod names.
//
// The node agent keeps a file in /etc/hosts format current and names it in SLUICE_HOSTS_FILE
// for the processes it starts. main() reads that variable and builds a HostsFileResolver; the
// HTTP client consults it before the system resolver, so "dataflow.default.svc" reaches the
// loopback address of the pod behind it. The file is re-read whenever its modification time or
// size changes, so records the node agent adds later are seen without restarts.
//
// Thread safety: Lookup may be called from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http {

struct HostsTable {
  // Lower-cased name -> addresses in file order (a headless Service has several).
  std::map<std::string, std::vector<std::string>, std::less<>> addresses;
  // 1-based numbers of lines that were not "ADDRESS NAME [NAME...]" and were skipped.
  std::vector<int> bad_lines;
};

// Parses hosts-format text: "ADDRESS NAME [ALIAS...]" per line, '#' starts a comment, names are
// case-insensitive. A name listed on several lines gets every address, in order.
HostsTable ParseHostsFile(std::string_view text);

class HostsFileResolver {
 public:
  explicit HostsFileResolver(std::filesystem::path path);

  // The first address recorded for `host`, or nullopt when the file lacks it (or is missing).
  std::optional<std::string> Lookup(std::string_view host);
  // Every address recorded for `host` (empty when none).
  std::vector<std::string> LookupAll(std::string_view host);

  const std::filesystem::path& path() const { return path_; }

 private:
  void RefreshLocked();

  std::filesystem::path path_;
  std::mutex mu_;
  std::filesystem::file_time_type mtime_{};
  uintmax_t size_ = 0;
  bool loaded_ = false;
  HostsTable table_;
};

}  // namespace sluice::http
