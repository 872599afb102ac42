// ASCII text helpers, written once: whitespace, stripping and lower-casing as the C locale does
// them, for the ASCII text they serve (Kubernetes names and selectors, HTTP headers and token
// files, YAML scalars, model output the rewards parse). Bytes outside ASCII pass through unchanged,
// so UTF-8 text is never split or altered.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// ' ', '\t', '\n', '\v', '\f', '\r': what std::isspace accepts in the C locale.
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// '0'..'9'.
constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// `s` without leading and trailing ASCII whitespace; a view into `s`.
constexpr std::string_view StripAsciiSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// 'A'..'Z' lowered; every other byte as it was.
constexpr char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
std::string AsciiLower(std::string_view s);

}  // namespace sluice
