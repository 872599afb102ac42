// BpeTokenizer::Impl: the tables a BpeTokenizer is loaded into, shared by the files that
// implement it (each file holds one concept):
//   bpe_tokenizer_json.cpp  loading tokenizer.json (Parse*, BuildTables, ResolveNames, From*)
//   bpe_pre_tokenizer.cpp   the pre-tokenizer steps (ForEachPiece)
//   bpe_merges.cpp          BPE merges within a word, and the word cache (MergeWord, EncodeWord)
//   bpe_tokenizer.cpp       added-token matching (EncodeText) and the Tokenizer interface
// Internal to those files; the API is bpe_tokenizer.h.
//
// Units: ids are token ids (int32, at most kMaxTokenId in bpe_tokenizer_json.cpp); sizes and
// offsets of text are in bytes.
// Ownership: a BpeTokenizer owns its Impl (unique_ptr); the Impl owns all its tables.
//
// Thread safety: an Impl is immutable once FromJson returns, except for the word cache, which is
// guarded by cache_mu (shared for lookups, exclusive for inserts), so every const method may run
// on several threads at once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/utf8.h"
#include "workers/model/bpe_pre_tokenizer.h"
#include "workers/model/bpe_tokenizer.h"

namespace sluice::model {
namespace bpe_internal {

// A string-keyed hash map that string_views can look up without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// Length of the well-formed UTF-8 sequence at s[i], or 1 for a byte that does not start one (it
// then stands alone, as a byte token).
inline size_t Utf8CharLen(std::string_view s, size_t i) {
  return std::max<size_t>(1, ValidUtf8Length(s, i));
}

// A token of tokenizer.json's "added_tokens", matched in the raw text before pre-tokenizing.
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// What merging an adjacent pair gives: its rank (lower merges first) and the merged token.
struct MergeRule {
  int32_t rank;
  int32_t merged;
};

// The key of the adjacent pair (a, b) in Impl::merges.
inline uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace bpe_internal

struct BpeTokenizer::Impl {
  // Pre-tokenizer.
  std::vector<bpe_internal::PreTokenizerStep> steps;

  // Model.
  bpe_internal::StringMap<int32_t> vocab;
  std::unordered_map<uint64_t, bpe_internal::MergeRule> merges;
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::array<int32_t, 256> byte_fallback_ids{};  // -1 where <0xAB> is missing.

  // Added tokens, and for each first byte the indices of those starting with it, longest first.
  std::vector<bpe_internal::AddedToken> added;
  std::array<std::vector<uint32_t>, 256> added_by_first_byte;
  bpe_internal::StringMap<int32_t> added_ids;

  // Post-processor template.
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;

  // Decoding.
  bool decode_byte_level = false;
  bool decode_byte_fallback = false;
  std::vector<std::string> id_text;   // As stored.
  std::vector<std::string> id_bytes;  // What Decode emits.
  std::vector<uint8_t> id_flags;      // kDefined | kSpecial.
  static constexpr uint8_t kDefined = 1;
  static constexpr uint8_t kSpecial = 2;

  std::optional<int32_t> bos;
  std::optional<int32_t> eos;
  std::optional<int32_t> pad;

  mutable std::shared_mutex cache_mu;
  mutable bpe_internal::StringMap<std::vector<int32_t>> cache;

  Status ParseNormalizer(const nlohmann::json& j, const std::string& field);
  Status ParsePreTokenizer(const nlohmann::json& j, const std::string& field);
  Status ParseModel(const nlohmann::json& j);
  Status ParseAddedTokens(const nlohmann::json& j);
  Status ParsePostProcessor(const nlohmann::json& j, const std::string& field);
  Status ParseDecoder(const nlohmann::json& j, const std::string& field);
  Status BuildTables();
  Status ResolveNames(const BpeSpecialNames& names);

  std::optional<int32_t> Lookup(std::string_view token) const {
    if (auto it = added_ids.find(token); it != added_ids.end()) return it->second;
    if (auto it = vocab.find(token); it != vocab.end()) return it->second;
    return std::nullopt;
  }

  // Runs pre-tokenizer steps from `step` on `piece`, calling `emit` with each final piece (a
  // view valid only during the call).
  void ForEachPiece(size_t step, std::string_view piece,
                    const std::function<void(std::string_view)>& emit) const;
  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;
  void MergeWord(std::string_view word, std::vector<int32_t>& out) const;
  void EncodeChunk(std::string_view chunk, std::vector<int32_t>& out) const;
  std::vector<int32_t> EncodeText(std::string_view text, bool match_special,
                                  bool add_special) const;
};

}  // namespace sluice::model
