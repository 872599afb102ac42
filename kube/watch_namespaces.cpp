#include "kube/watch_namespaces.h"

#include <algorithm>

#include "common/ascii.h"

namespace sluice::kube {
namespace {

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

}  // namespace

Result<std::vector<std::string>> ParseWatchNamespaces(std::string_view flag) {
  if (StripAsciiSpace(flag).empty()) return std::vector<std::string>{""};
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= flag.size()) {
    const size_t comma = std::min(flag.find(',', start), flag.size());
    const std::string_view name = StripAsciiSpace(flag.substr(start, comma - start));
    if (name.empty()) {
      return Status::InvalidArgument("empty namespace name in \"" + std::string(flag) + "\"",
                                     "namespace");
    }
    if (!IsDns1123Label(name)) {
      return Status::InvalidArgument(
          "\"" + std::string(name) +
              "\" is not a valid namespace name (a DNS-1123 label: at most 63 characters of "
              "a-z, 0-9 and '-', starting and ending with a letter or digit)",
          "namespace");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
    start = comma + 1;
  }
  return out;
}

}  // namespace sluice::kube
