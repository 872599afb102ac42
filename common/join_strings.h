// JoinStrings: items with a separator between them, for messages and table cells.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// {"a", "b", "c"} and ", " -> "a, b, c"; {} -> "". Empty items are kept ({"", "a"} -> ", a").
std::string JoinStrings(const std::vector<std::string>& items, std::string_view separator);

}  // namespace sluice
