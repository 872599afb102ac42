#include "common/go_quote.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

namespace sluice {

std::string GoQuote(std::string_view text) {
  static constexpr std::pair<char, const char*> kEscapes[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\a', "\\a"}, {'\b', "\\b"}, {'\f', "\\f"},
      {'\n', "\\n"}, {'\r', "\\r"},  {'\t', "\\t"}, {'\v', "\\v"}};
  std::string out = "\"";
  for (char c : text) {
    const auto* escape = std::find_if(std::begin(kEscapes), std::end(kEscapes),
                                      [c](const auto& e) { return e.first == c; });
    const auto u = static_cast<unsigned char>(c);
    if (escape != std::end(kEscapes)) {
      out += escape->second;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;  // Bytes of UTF-8 text pass as they are, as Go's printable runes do.
    }
  }
  return out + '"';
}

std::string GoQuoteList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ' ';
    out += GoQuote(items[i]);
  }
  return out + "]";
}

}  // namespace sluice
