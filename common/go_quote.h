// Go's %q of a string (strconv.Quote), as Kubernetes writes names and values in its messages, so
// ours read as kube's do: shared by the API server's admission and RBAC messages and the node's
// rendering of downward-API maps.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// `text` in double quotes with `"` and `\` backslash-escaped, \a \b \f \n \r \t \v as Go writes
// them, other control bytes (below 0x20, and 0x7f) as \xNN; every other byte passes as it is,
// so UTF-8 text stays readable as Go's printable runes do (unlike Go, invalid UTF-8 and
// non-printable non-ASCII runes are not escaped). GoQuote("a\"b\n\x01") is `"a\"b\n\x01"`.
std::string GoQuote(std::string_view text);

// Go's %q of a []string: each item GoQuote'd, space-separated, in brackets: `["a" "b"]`, `[]`.
std::string GoQuoteList(const std::vector<std::string>& items);

}  // namespace sluice
