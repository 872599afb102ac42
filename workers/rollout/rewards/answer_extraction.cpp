#include "workers/rollout/rewards/answer_extraction.h"

#include <cstddef>
#include <vector>

#include "common/ascii.h"

namespace sluice::rollout {
namespace {

bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsBlank(std::string_view s) { return StripAsciiSpace(s).empty(); }

// The length of the box command ("\boxed", "\fbox") starting at `pos`, or 0 when none starts
// there. The name must end there: "\boxedfoo" is another command.
size_t BoxCommandLength(std::string_view text, size_t pos) {
  for (std::string_view command : {std::string_view("\\boxed"), std::string_view("\\fbox")}) {
    if (text.substr(pos, command.size()) != command) continue;
    const size_t end = pos + command.size();
    if (end < text.size() && IsAlnum(text[end])) return 0;
    return command.size();
  }
  return 0;
}

// `line` without the closing markdown bold of "**42**" or "**42**." (the opening one is skipped
// with the marker). The sentence's period goes with it: both comparisons drop it anyway.
std::string_view StripBoldClose(std::string_view line) {
  std::string_view body = line;
  if (body.ends_with('.')) body.remove_suffix(1);
  if (!body.ends_with('*')) return line;
  while (!body.empty() && body.back() == '*') body.remove_suffix(1);
  return StripAsciiSpace(body);
}

// The content of the last marker-introduced line: see FinalAnswerText. Empty when no marker.
std::string_view AfterAnswerMarker(std::string_view text) {
  const std::string lower = AsciiLower(text);
  constexpr std::string_view kWord = "answer";
  size_t pos = lower.rfind(kWord);
  while (pos != std::string::npos) {
    const size_t word_end = pos + kWord.size();
    const bool starts_word = pos == 0 || !IsAlnum(lower[pos - 1]);
    const bool ends_word = word_end == lower.size() || !IsAlnum(lower[word_end]);
    if (starts_word && ends_word) {
      // Markdown bold ("**Answer:**", "**Answer**:") and spacing may sit around the marker.
      size_t k = word_end;
      while (k < lower.size() && (lower[k] == '*' || lower[k] == ' ' || lower[k] == '\t')) ++k;
      size_t marker_end = std::string::npos;
      if (k < lower.size() && lower[k] == ':') {
        marker_end = k + 1;
      } else if (k > word_end && lower.compare(k, 2, "is") == 0 &&
                 (k + 2 == lower.size() || !IsAlnum(lower[k + 2]))) {
        marker_end = k + 2;
      }
      if (marker_end != std::string::npos) {
        size_t begin = marker_end;
        while (begin < text.size() && (text[begin] == ' ' || text[begin] == '\t' ||
                                       text[begin] == '*' || text[begin] == ':')) {
          ++begin;
        }
        // The rest of the marker's line; when blank, the next non-blank line.
        while (begin < text.size()) {
          size_t line_end = text.find('\n', begin);
          if (line_end == std::string_view::npos) line_end = text.size();
          const std::string_view line = text.substr(begin, line_end - begin);
          if (!IsBlank(line)) return StripBoldClose(StripAsciiSpace(line));
          begin = line_end + 1;
        }
        return {};
      }
    }
    if (pos == 0) break;
    pos = lower.rfind(kWord, pos - 1);
  }
  return {};
}

}  // namespace

std::string ExtractBoxed(std::string_view text) {
  // One pass with a stack of open braces. A box closes when its own brace does; the box that
  // closes last in the text has the greatest end, so no other closed box contains it and it is
  // the last top-level one. Unclosed boxes never close and so are never chosen.
  struct Open {
    size_t content_begin;
    bool box;
  };
  std::vector<Open> open;
  std::string_view best;
  bool found = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\\') {
      const size_t command = BoxCommandLength(text, i);
      if (command == 0) {
        i += 2;  // An escaped character (\{, \}, \\) or the first letter of another command.
        continue;
      }
      size_t k = i + command;
      while (k < text.size() && IsAsciiSpace(text[k])) ++k;
      if (k < text.size() && text[k] == '{') {
        open.push_back({k + 1, true});
        i = k + 1;
        continue;
      }
      if (k > i + command) {  // "\boxed 42": TeX's single-token argument, written out.
        size_t end = k;
        while (end < text.size() && !IsAsciiSpace(text[end]) && text[end] != '$') ++end;
        if (end > k) {
          best = text.substr(k, end - k);
          found = true;
        }
        i = end;
        continue;
      }
      i = k;
      continue;
    }
    if (c == '{') {
      open.push_back({i + 1, false});
    } else if (c == '}' && !open.empty()) {
      const Open top = open.back();
      open.pop_back();
      if (top.box) {
        best = text.substr(top.content_begin, i - top.content_begin);
        found = true;
      }
    }
    ++i;
  }
  return found ? std::string(best) : std::string();
}

std::string ExtractAnswerTag(std::string_view text) {
  constexpr std::string_view kOpen = "<answer>";
  constexpr std::string_view kClose = "</answer>";
  const std::string lower = AsciiLower(text);
  // The last opening tag that a closing tag follows, paired with the first closing tag after it.
  const size_t last_close = lower.rfind(kClose);
  if (last_close == std::string::npos) return {};
  const size_t open = lower.rfind(kOpen, last_close);
  if (open == std::string::npos) return {};
  const size_t begin = open + kOpen.size();
  const size_t close = lower.find(kClose, begin);
  return std::string(text.substr(begin, close - begin));
}

std::string FinalAnswerText(std::string_view response) {
  const std::string boxed = ExtractBoxed(response);
  if (!IsBlank(boxed)) return std::string(StripAsciiSpace(boxed));
  const std::string tagged = ExtractAnswerTag(response);
  if (!IsBlank(tagged)) return std::string(StripAsciiSpace(tagged));
  const std::string_view marked = AfterAnswerMarker(response);
  if (!marked.empty()) return std::string(marked);
  return std::string(StripAsciiSpace(response));
}

std::string NormaliseAnswer(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  bool pending_space = false;
  for (char c : StripAsciiSpace(text)) {
    if (IsAsciiSpace(c)) {
      pending_space = true;
      continue;
    }
    if (pending_space) s.push_back(' ');
    pending_space = false;
    s.push_back(AsciiLower(c));
  }

  // Peel the wrappers as a view, then copy once.
  std::string_view v = s;
  bool period_stripped = false;
  bool changed = true;
  while (changed && !v.empty()) {
    changed = false;
    if (!period_stripped && v.back() == '.') {
      v.remove_suffix(1);
      period_stripped = true;
      changed = true;
    }
    if (v.size() >= 2 && v.front() == '$' && v.back() == '$') {
      v = v.substr(1, v.size() - 2);
      changed = true;
    }
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
      changed = true;
    }
    const std::string_view trimmed = StripAsciiSpace(v);
    if (trimmed.size() != v.size()) {
      v = trimmed;
      changed = true;
    }
  }
  return std::string(v);
}

std::string QuoteExcerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return "\"" + std::string(text) + "\"";
  size_t cut = max_bytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a sequence's first byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + std::string(text.substr(0, cut)) + "...\"";
}

}  // namespace sluice::rollout
