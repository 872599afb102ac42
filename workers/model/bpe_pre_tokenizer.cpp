#include "workers/model/bpe_pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "workers/model/bpe_byte_alphabet.h"
#include "workers/model/bpe_tokenizer_impl.h"

namespace sluice::model {
namespace bpe_internal {

Result<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error,
                                   &error_offset, nullptr);
  if (code == nullptr) {
    std::array<PCRE2_UCHAR, 256> buf{};
    pcre2_get_error_message(error, buf.data(), buf.size());
    return Status::InvalidArgument("regex does not compile at offset " +
                                   std::to_string(error_offset) + ": " +
                                   reinterpret_cast<const char*>(buf.data()));
  }
  // JIT is an optimisation only: without it (or where it fails) the interpreter runs.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(code));
}

Regex::~Regex() { pcre2_code_free(code_); }

void Regex::FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t offset = 0;
  while (offset < s.size()) {
    int rc = pcre2_match(code_, subject, s.size(), offset, 0, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code_, subject, s.size(), offset, PCRE2_NO_JIT, md, nullptr);
    }
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] > ov[0]) {
      out.emplace_back(ov[0], ov[1]);
      offset = ov[1];
    } else {
      offset = ov[0] + 1;
      while (offset < s.size() && (static_cast<uint8_t>(s[offset]) & 0xC0) == 0x80) ++offset;
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace bpe_internal

namespace {

using bpe_internal::Alphabet;
using bpe_internal::ByteAlphabet;
using bpe_internal::ByteLevelStep;
using bpe_internal::SplitBehavior;
using bpe_internal::SplitStep;

struct Segment {
  size_t begin;
  size_t end;
  bool is_match;
};

// Cuts a piece of `size` bytes at `matches` into the non-empty segments the behavior says (the
// same rules as the HF library's SplitDelimiterBehavior), stored in `result`.
void SplitSegments(size_t size, const std::vector<std::pair<size_t, size_t>>& matches,
                   SplitBehavior behavior, bool invert, std::vector<Segment>& result) {
  std::vector<Segment> segs;
  size_t last = 0;
  for (const auto& [b, e] : matches) {
    if (b > last) segs.push_back({last, b, invert});
    segs.push_back({b, e, !invert});
    last = e;
  }
  if (last < size) segs.push_back({last, size, invert});

  result.clear();
  switch (behavior) {
    case SplitBehavior::kIsolated:
      result = std::move(segs);
      break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segs) {
        if (!s.is_match) result.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.is_match && !previous_match && !result.empty()) {
          result.back().end = s.end;
        } else {
          result.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool next_match = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->is_match && !next_match && !result.empty()) {
          result.back().begin = it->begin;
        } else {
          result.push_back(*it);
        }
        next_match = it->is_match;
      }
      std::reverse(result.begin(), result.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.is_match && previous_match && !result.empty()) {
          result.back().end = s.end;
        } else {
          result.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  std::erase_if(result, [](const Segment& s) { return s.end <= s.begin; });
}

}  // namespace

void BpeTokenizer::Impl::ForEachPiece(size_t step, std::string_view piece,
                                      const std::function<void(std::string_view)>& emit) const {
  if (piece.empty()) return;
  if (step == steps.size()) {
    emit(piece);
    return;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Segment> segments;
  if (const auto* split = std::get_if<SplitStep>(&steps[step])) {
    if (split->regex) {
      split->regex->FindAll(piece, matches);
    } else {
      for (size_t at = piece.find(split->literal); at != std::string_view::npos;
           at = piece.find(split->literal, at + split->literal.size())) {
        matches.emplace_back(at, at + split->literal.size());
      }
    }
    SplitSegments(piece.size(), matches, split->behavior, split->invert, segments);
    for (const Segment& seg : segments) {
      ForEachPiece(step + 1, piece.substr(seg.begin, seg.end - seg.begin), emit);
    }
    return;
  }
  const auto& bl = std::get<ByteLevelStep>(steps[step]);
  std::string prefixed;
  if (bl.add_prefix_space && piece.front() != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (bl.regex) {
    bl.regex->FindAll(piece, matches);
    SplitSegments(piece.size(), matches, SplitBehavior::kIsolated, false, segments);
  } else {
    segments.push_back({0, piece.size(), false});
  }
  const ByteAlphabet& alphabet = Alphabet();
  std::string mapped;
  for (const Segment& seg : segments) {
    mapped.clear();
    for (size_t i = seg.begin; i < seg.end; ++i) {
      mapped += alphabet.byte_to_utf8[static_cast<uint8_t>(piece[i])];
    }
    ForEachPiece(step + 1, mapped, emit);
  }
}

}  // namespace sluice::model
