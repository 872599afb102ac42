#include "workers/rollout/engine/stop_strings.h"

#include <algorithm>

namespace sluice::engine {
namespace {

// The length of the UTF-8 sequence a lead byte starts, 0 for a continuation byte, 1 for ASCII
// and for bytes that cannot start a sequence (streamed as they are rather than held forever).
size_t Utf8SequenceLength(unsigned char byte) {
  if ((byte & 0xC0) == 0x80) return 0;
  if ((byte & 0xE0) == 0xC0) return 2;
  if ((byte & 0xF0) == 0xE0) return 3;
  if ((byte & 0xF8) == 0xF0) return 4;
  return 1;
}

// `n`, or less so that text[0, n) does not end inside a UTF-8 sequence.
size_t BackOffToCodePoint(std::string_view text, size_t n) {
  // A sequence is at most 4 bytes, so its lead byte is among the last 4.
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const size_t len = Utf8SequenceLength(static_cast<unsigned char>(text[n - back]));
    if (len == 0) continue;
    return len > back ? n - back : n;
  }
  return n;  // Only continuation bytes: malformed; do not hold it back.
}

}  // namespace

std::optional<size_t> FindStop(std::string_view text, size_t checked_upto,
                               const std::vector<std::string>& stops) {
  std::optional<size_t> earliest;
  for (const std::string& stop : stops) {
    if (stop.empty() || stop.size() > text.size()) continue;
    // An occurrence ending after checked_upto begins after checked_upto - stop.size().
    const size_t from = checked_upto >= stop.size() ? checked_upto - stop.size() + 1 : 0;
    const size_t at = text.find(stop, from);
    if (at != std::string_view::npos && (!earliest || at < *earliest)) earliest = at;
  }
  return earliest;
}

size_t StreamableLength(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& stop : stops) {
    // Longest proper prefix of `stop` that is a suffix of `text`, longer than what is held.
    const size_t longest = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size());
    for (size_t k = longest; k > hold; --k) {
      if (text.ends_with(std::string_view(stop).substr(0, k))) {
        hold = k;
        break;
      }
    }
  }
  return BackOffToCodePoint(text, text.size() - hold);
}

}  // namespace sluice::engine
