// libFuzzer target for the tokenizer.json loader (workers/model/bpe_tokenizer.h,
// BpeTokenizer::FromJson).
//
// Each input is the text of a tokenizer.json. Loading must never crash or hang; a file it refuses
// is an InvalidArgument. When a file loads, a few fixed texts (ASCII, digits, multi-byte and
// invalid UTF-8, chat markers) are encoded and decoded, and what the implementation guarantees
// for every loaded tokenizer is checked:
//   - Encode(text) and EncodeOrdinary(text) give ids in [0, vocab_size()), the same ids on a
//     second call (the second one comes from the word cache);
//   - Encode(text, add_special = true) is the same template prefix and suffix (those of
//     Encode("", true)) around Encode(text);
//   - Decode concatenates: Decode(ids) is the concatenation of each id's Decode, with and without
//     skip_special, and skip_special drops exactly the ids IsSpecial says;
//   - ids outside [0, vocab_size()) decode to nothing, are not special and have no text;
//   - eos_id, pad_id and TokenId answers lie in [0, vocab_size()).
// Decode(Encode(text)) == text is NOT checked: it holds for the byte-level vocabularies real
// models ship, not for every file the loader accepts (a Split with "Removed", an unk token, a
// vocabulary that cannot spell a character all lose bytes by design).
//
// Fuzz it with `scripts/fuzz.sh tokenizer_json [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_require.h"
#include "workers/model/bpe_tokenizer.h"

namespace {

using sluice::model::BpeTokenizer;

// Bigger inputs prove nothing more and slow the fuzzer down.
constexpr size_t kMaxInputBytes = 64 << 10;

using sluice::fuzz::Require;

// Invalid UTF-8 (stray continuations, an overlong form, a surrogate, a truncated sequence) and a
// NUL byte.
constexpr char kBadUtf8[] = "bad\x80\xBF utf8\xC0\xAF\xED\xA0\x80x\xF0\x9F\x98\0end";

// Short, so a pathological split regex stays bounded (PCRE2's match limit applies per match).
constexpr std::string_view kTexts[] = {
    "hello world",
    "Hello, World! 123  x\n\ny I'M don't",
    "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!",
    "<|im_start|>user\nhi<|im_end|><|endoftext|></s><s>",
    std::string_view(kBadUtf8, sizeof(kBadUtf8) - 1),
};

// Names a tokenizer.json may define; TokenId of each must be in range when found.
constexpr std::string_view kNames[] = {"<|endoftext|>", "<s>", "</s>", "<unk>", "<0x41>", "a", ""};

void CheckIdsInRange(const BpeTokenizer& tok, const std::vector<int32_t>& ids, const char* what) {
  for (int32_t id : ids) Require(id >= 0 && id < tok.vocab_size(), what);
}

void CheckDecode(const BpeTokenizer& tok, const std::vector<int32_t>& ids) {
  for (bool skip : {false, true}) {
    std::string one_by_one;
    for (int32_t id : ids) {
      const std::string piece = tok.Decode(std::vector<int32_t>{id}, skip);
      if (skip && tok.IsSpecial(id)) Require(piece.empty(), "skip_special drops special ids");
      one_by_one += piece;
    }
    Require(tok.Decode(ids, skip) == one_by_one, "Decode concatenates the tokens' bytes");
  }
}

void CheckLoaded(const BpeTokenizer& tok) {
  const int32_t size = tok.vocab_size();
  Require(size >= 0, "vocab_size >= 0");
  // Ids outside the vocabulary.
  const std::vector<int32_t> outside = {-1, size, std::numeric_limits<int32_t>::min(),
                                        std::numeric_limits<int32_t>::max()};
  Require(tok.Decode(outside).empty(), "ids outside the vocabulary decode to nothing");
  for (int32_t id : outside) {
    Require(!tok.IsSpecial(id), "ids outside the vocabulary are not special");
    Require(tok.TokenText(id).empty(), "ids outside the vocabulary have no text");
  }
  for (const std::optional<int32_t>& id : {tok.eos_id(), tok.pad_id()}) {
    if (id) Require(*id >= 0 && *id < size, "eos/pad id in the vocabulary");
  }
  for (std::string_view name : kNames) {
    if (std::optional<int32_t> id = tok.TokenId(name)) {
      Require(*id >= 0 && *id < size, "TokenId in the vocabulary");
    }
  }

  const std::vector<int32_t> frame = tok.Encode("", /*add_special=*/true);
  for (std::string_view text : kTexts) {
    const std::vector<int32_t> ids = tok.Encode(text);
    CheckIdsInRange(tok, ids, "Encode ids in the vocabulary");
    Require(tok.Encode(text) == ids, "Encode is deterministic (word cache)");
    const std::vector<int32_t> ordinary = tok.EncodeOrdinary(text);
    CheckIdsInRange(tok, ordinary, "EncodeOrdinary ids in the vocabulary");
    Require(tok.EncodeOrdinary(text) == ordinary, "EncodeOrdinary is deterministic");

    // With add_special: prefix + ids + suffix, where prefix + suffix == Encode("", true).
    const std::vector<int32_t> framed = tok.Encode(text, /*add_special=*/true);
    Require(framed.size() == frame.size() + ids.size(), "add_special adds the template only");
    bool found = false;
    for (size_t split = 0; split <= frame.size() && !found; ++split) {
      found =
          std::equal(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(split),
                     framed.begin()) &&
          std::equal(ids.begin(), ids.end(), framed.begin() + static_cast<std::ptrdiff_t>(split)) &&
          std::equal(frame.begin() + static_cast<std::ptrdiff_t>(split), frame.end(),
                     framed.begin() + static_cast<std::ptrdiff_t>(split + ids.size()));
    }
    Require(found, "add_special puts the same prefix and suffix around Encode(text)");

    CheckDecode(tok, ids);
    CheckDecode(tok, ordinary);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto tok = BpeTokenizer::FromJson(json);
  if (!tok.ok()) return 0;
  CheckLoaded(**tok);
  return 0;
}
