// BpeTokenizer: byte-level BPE loaded from a Hugging Face `tokenizer.json` (GPT-2, Qwen2/2.5/3,
// Llama 3 and their relatives).
//
// What a tokenizer.json may contain (anything else is refused at load with a message naming the
// field and the type, e.g. `unsupported pre_tokenizer type "Metaspace"`):
//   normalizer     null, "NFC" (accepted as the identity: text is not renormalised, see below),
//                  or a "Sequence" of those.
//   pre_tokenizer  null, "Split" (pattern {"Regex": ...} compiled with PCRE2 in UTF + UCP mode,
//                  or {"String": ...}; behavior Isolated, Removed, MergedWithPrevious,
//                  MergedWithNext or Contiguous; invert), "ByteLevel" (add_prefix_space,
//                  use_regex with the GPT-2 pattern), or a "Sequence" of those, applied in order.
//   model          "BPE": vocab, merges ("a b" strings or ["a", "b"] pairs; the index is the
//                  rank), unk_token, fuse_unk, byte_fallback (<0xAB> tokens for characters the
//                  vocabulary lacks), ignore_merges (a word that is itself in the vocabulary is
//                  one token). dropout, continuing_subword_prefix and end_of_word_suffix must be
//                  null or empty.
//   added_tokens   matched in the raw text before anything else, leftmost then longest first;
//                  lstrip, rstrip and single_word honoured; "special" marks the ones Decode can
//                  skip and EncodeOrdinary treats as text.
//   post_processor null, "ByteLevel" (no effect on ids), "TemplateProcessing" (its "single"
//                  template: the special tokens before and after sequence A are what
//                  Encode(text, add_special = true) adds), or a "Sequence" of those.
//   decoder        null, "ByteLevel", "ByteFallback", "Fuse", or a "Sequence" of those.
//
// Deviations from the Hugging Face library, all in favour of exact round trips:
//   - NFC is not applied. Text that is already NFC (nearly all text) gets the same ids as HF;
//     decomposed text gets different (still valid, still round-tripping) ids.
//   - Invalid UTF-8 is accepted: the split regex never matches inside it, so its bytes end up
//     in their own pieces and become byte tokens; decoding gives the same bytes back. HF only
//     takes valid strings.
//   - ByteFallback decoding emits the raw bytes even where they are not valid UTF-8 (HF
//     substitutes U+FFFD).
//
// bos/eos/pad: given by name (FromDirectory reads them from tokenizer_config.json); when not
// given, bos is the token TemplateProcessing puts first, else the first of "<|begin_of_text|>",
// "<s>", "<bos>" present; eos the first of "<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>";
// pad the first of "<pad>", "<|pad|>", "[PAD]". Callers that know better pass the names.
//
// Performance: merges are applied per pre-tokenized word with a priority queue over adjacent
// pairs (O(n log n) per word); the result for words up to 64 bytes is cached (bounded, shared
// between threads).
//
// Thread safety: see tokenizer.h.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "workers/model/tokenizer.h"

namespace sluice::model {

struct BpeSpecialNames {
  std::optional<std::string> bos;
  std::optional<std::string> eos;
  std::optional<std::string> pad;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // From the text of a tokenizer.json. Names in `names` must exist in the vocabulary.
  static Result<std::unique_ptr<BpeTokenizer>> FromJson(std::string_view json,
                                                        const BpeSpecialNames& names = {});
  static Result<std::unique_ptr<BpeTokenizer>> FromFile(const std::filesystem::path& path,
                                                        const BpeSpecialNames& names = {});
  // dir/tokenizer.json, with bos_token/eos_token/pad_token from dir/tokenizer_config.json when
  // that file exists (a string or {"content": ...}; null means none).
  static Result<std::unique_ptr<BpeTokenizer>> FromDirectory(const std::filesystem::path& dir);

  ~BpeTokenizer() override;
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<int32_t> Encode(std::string_view text, bool add_special = false) const override;
  std::vector<int32_t> EncodeOrdinary(std::string_view text) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> TokenId(std::string_view token) const override;
  std::string_view TokenText(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::optional<int32_t> bos_id() const override;
  std::optional<int32_t> eos_id() const override;
  std::optional<int32_t> pad_id() const override;

  // The pieces the pre-tokenizer makes of `text` (no added-token matching), in the
  // vocabulary's alphabet. For tests and debugging.
  std::vector<std::string> PreTokenize(std::string_view text) const;

  struct Impl;

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::model
