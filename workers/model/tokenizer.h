// Tokenizer: the text <-> token id interface shared by the rollout engine and the trainer.
//
// Two implementations: BpeTokenizer (byte-level BPE from a Hugging Face tokenizer.json, for real
// models) and CharTokenizer (one id per byte, for the built-in tiny models). Both round-trip any
// byte string: Decode(Encode(s)) == s for every s, valid UTF-8 or not, as long as the ids are
// decoded with skip_special = false. Decoding concatenates: Decode(a ++ b) == Decode(a) +
// Decode(b), so a stream of tokens can be decoded one token at a time (the engine's stop
// strings rely on it); a tokenizer whose decoder strips or joins across tokens must not be
// added without revisiting that.
//
// Special tokens: tokens whose text is matched as a whole before any splitting (chat markers
// such as "<|im_start|>", "<|endoftext|>"). Encode() turns their text into their single id;
// EncodeOrdinary() does not (it encodes the marker's characters like any other text, so text
// from an untrusted source cannot smuggle a marker in).
//
// Thread safety: a loaded tokenizer is immutable except for internal caches, which are locked;
// every method may be called from several threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::model {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`. Added/special token texts in `text` become their single ids. With
  // add_special, the tokenizer's template tokens are added around the text as well (for a HF
  // tokenizer, what its post_processor adds: "<|begin_of_text|>" for Llama 3, nothing for
  // Qwen2; for CharTokenizer, <bos>).
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special = false) const = 0;

  // Like Encode(text, false), but special-token texts are encoded as ordinary text.
  virtual std::vector<int32_t> EncodeOrdinary(std::string_view text) const = 0;

  // The bytes the ids stand for. With skip_special, special tokens produce nothing. Ids outside
  // [0, vocab_size()) and ids the vocabulary does not define produce nothing.
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;

  // One more than the largest id the tokenizer defines (the model's embedding table may be
  // larger).
  virtual int32_t vocab_size() const = 0;

  // The id of a token by its text: a special token's content ("<|im_end|>") or a vocabulary
  // entry as stored (for byte-level BPE, in the byte-to-unicode alphabet: "Ġhello").
  virtual std::optional<int32_t> TokenId(std::string_view token) const = 0;
  // The stored text of an id (inverse of TokenId); empty for an unknown id.
  virtual std::string_view TokenText(int32_t id) const = 0;
  // Whether `id` is a special token (Decode skips it when asked to).
  virtual bool IsSpecial(int32_t id) const = 0;

  // Ids of the beginning-of-sequence, end-of-sequence and padding tokens, when the tokenizer
  // has them.
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  virtual std::optional<int32_t> pad_id() const = 0;
};

}  // namespace sluice::model
