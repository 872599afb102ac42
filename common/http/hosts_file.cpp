#include "common/http/hosts_file.h"

#include <arpa/inet.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/ascii.h"

namespace sluice::http {
namespace {

bool IsIpAddress(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

}  // namespace

HostsTable ParseHostsFile(std::string_view text) {
  HostsTable table;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::istringstream fields{std::string(line)};
    std::string address;
    if (!(fields >> address)) continue;  // Blank or comment-only.
    std::vector<std::string> names;
    for (std::string name; fields >> name;) names.push_back(AsciiLower(name));
    if (names.empty() || !IsIpAddress(address)) {
      table.bad_lines.push_back(line_no);
      continue;
    }
    for (const std::string& name : names) table.addresses[name].push_back(address);
    if (end == text.size()) break;
  }
  return table;
}

HostsFileResolver::HostsFileResolver(std::filesystem::path path) : path_(std::move(path)) {}

void HostsFileResolver::RefreshLocked() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  if (ec) {
    table_ = {};
    loaded_ = false;
    return;
  }
  const uintmax_t size = std::filesystem::file_size(path_, ec);
  if (ec) return;
  if (loaded_ && mtime == mtime_ && size == size_) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  std::ostringstream text;
  text << in.rdbuf();
  table_ = ParseHostsFile(text.str());
  mtime_ = mtime;
  size_ = size;
  loaded_ = true;
}

std::optional<std::string> HostsFileResolver::Lookup(std::string_view host) {
  std::vector<std::string> all = LookupAll(host);
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::vector<std::string> HostsFileResolver::LookupAll(std::string_view host) {
  std::lock_guard<std::mutex> lock(mu_);
  RefreshLocked();
  auto it = table_.addresses.find(AsciiLower(host));
  if (it == table_.addresses.end()) return {};
  return it->second;
}

}  // namespace sluice::http
