// CharTokenizer: the byte-level tokenizer of the built-in tiny models (vocab=char).
//
// Ids, fixed forever (checkpoints of tiny models depend on them):
//   0..255   the byte of the same value
//   256 <pad>   257 <bos>   258 <eos>
//   259 <|system|>   260 <|user|>   261 <|assistant|>   262 <|tool|>   263 <|end|>
// vocab_size() is 264. All ids from 256 are special: Encode matches their text as single ids
// (EncodeOrdinary spells it out byte by byte); Decode(skip_special = true) drops them. Any byte
// string round-trips. Encode(text, add_special = true) puts <bos> first.
//
// Thread safety: immutable; any method from any thread.
#pragma once

#include <array>
#include <string_view>

#include "workers/model/tokenizer.h"

namespace sluice::model {

class CharTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kPad = 256;
  static constexpr int32_t kBos = 257;
  static constexpr int32_t kEos = 258;
  static constexpr int32_t kSystem = 259;
  static constexpr int32_t kUser = 260;
  static constexpr int32_t kAssistant = 261;
  static constexpr int32_t kTool = 262;
  static constexpr int32_t kEnd = 263;
  static constexpr int32_t kVocabSize = 264;
  // Texts of ids 256.. in order.
  static constexpr std::array<std::string_view, kVocabSize - 256> kSpecialTexts = {
      "<pad>", "<bos>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>"};

  std::vector<int32_t> Encode(std::string_view text, bool add_special = false) const override;
  std::vector<int32_t> EncodeOrdinary(std::string_view text) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  int32_t vocab_size() const override { return kVocabSize; }
  // Special texts give their ids; a one-byte string gives that byte's id.
  std::optional<int32_t> TokenId(std::string_view token) const override;
  std::string_view TokenText(int32_t id) const override;
  bool IsSpecial(int32_t id) const override { return id >= 256 && id < kVocabSize; }
  std::optional<int32_t> bos_id() const override { return kBos; }
  std::optional<int32_t> eos_id() const override { return kEos; }
  std::optional<int32_t> pad_id() const override { return kPad; }
};

}  // namespace sluice::model
