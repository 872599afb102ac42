// The pre-tokenizer of BpeTokenizer: the steps of a tokenizer.json "pre_tokenizer" (Split and
// ByteLevel) that cut text into the words BPE merges within, and the PCRE2 regex they match
// with. Reading the "pre_tokenizer" object into steps is in bpe_tokenizer_json.cpp; running them
// (BpeTokenizer::Impl::ForEachPiece, with the HF library's rules for turning matches into pieces)
// in bpe_pre_tokenizer.cpp. Internal to the bpe_*.cpp files.
//
// Units: offsets and sizes are in bytes of the text (UTF-8, possibly invalid).
// Ownership: a step owns its compiled regex.
//
// Thread safety: a compiled Regex is immutable; FindAll may run on several threads at once (each
// call allocates its own match data).
#pragma once

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"

namespace sluice::model::bpe_internal {

// The pre-tokenizer pattern of GPT-2, used by ByteLevel when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A PCRE2 pattern compiled in UTF + UCP mode that also matches in invalid UTF-8 (never inside
// it).
class Regex {
 public:
  static Result<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [begin, end) of every non-empty match of `s`, left to right, not overlapping. A
  // match error (a resource limit) ends the search: the rest of `s` is then one gap, which keeps
  // every byte.
  void FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  explicit Regex(pcre2_code* code) : code_(code) {}
  pcre2_code* code_;
};

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
  std::unique_ptr<Regex> regex;  // Null for a literal pattern.
  std::string literal;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct ByteLevelStep {
  bool add_prefix_space = false;
  std::unique_ptr<Regex> regex;  // The GPT-2 pattern when use_regex; else null.
};

using PreTokenizerStep = std::variant<SplitStep, ByteLevelStep>;

}  // namespace sluice::model::bpe_internal
