#include "workers/rollout/sandbox/mount_table.h"

#include <sys/mount.h>

#include <sstream>

namespace sluice::rollout {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo (three octal digits).
std::string UnescapeMountPath(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && text.size() - i >= 4) {
      const std::string_view digits = text.substr(i + 1, 3);
      bool octal = true;
      for (char c : digits) octal = octal && c >= '0' && c <= '7';
      if (octal) {
        out += static_cast<char>(((digits[0] - '0') << 6) | ((digits[1] - '0') << 3) |
                                 (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

unsigned long PreservedFlags(std::string_view options) {
  unsigned long flags = 0;
  while (!options.empty()) {
    const size_t comma = options.find(',');
    const std::string_view option = options.substr(0, comma);
    options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
    if (option == "nosuid") flags |= MS_NOSUID;
    if (option == "nodev") flags |= MS_NODEV;
    if (option == "noexec") flags |= MS_NOEXEC;
    if (option == "noatime") flags |= MS_NOATIME;
    if (option == "nodiratime") flags |= MS_NODIRATIME;
    if (option == "relatime") flags |= MS_RELATIME;
  }
  return flags;
}

}  // namespace

bool PathIsUnder(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (dir == "/") return !path.empty() && path[0] == '/';
  if (path.substr(0, dir.size()) != dir) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

std::vector<ReadOnlyRemount> ReadOnlyRemounts(std::string_view mountinfo,
                                              const std::vector<std::string>& skip_under) {
  std::vector<ReadOnlyRemount> out;
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    // id parent major:minor root mount-point options [optional fields...] - type source super
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point, options;
    if (!(fields >> id >> parent >> device >> root >> mount_point >> options)) continue;
    std::string path = UnescapeMountPath(mount_point);
    if (path.empty() || path[0] != '/' || PathIsUnder(path, "/proc")) continue;
    bool skipped = false;
    for (const std::string& dir : skip_under) skipped = skipped || PathIsUnder(path, dir);
    if (skipped) continue;
    out.push_back({std::move(path), MS_REMOUNT | MS_BIND | MS_RDONLY | PreservedFlags(options)});
  }
  return out;
}

}  // namespace sluice::rollout
