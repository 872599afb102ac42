#include "common/json/json_depth.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace sluice {

std::optional<size_t> FirstTooDeepJson(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // The escaped character, whatever it is, cannot end the string.
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

size_t JsonValueDepth(const nlohmann::json& value) {
  size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, size_t>> pending = {{&value, 0}};
  while (!pending.empty()) {
    const auto [node, above] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) {
      deepest = std::max(deepest, above);
      continue;
    }
    deepest = std::max(deepest, above + 1);
    for (const nlohmann::json& child : *node) pending.emplace_back(&child, above + 1);
  }
  return deepest;
}

}  // namespace sluice
