#include "workers/model/bpe_byte_alphabet.h"

#include "common/utf8.h"

namespace sluice::model::bpe_internal {

ByteAlphabet::ByteAlphabet() {
  unicode_to_byte.fill(-1);
  char32_t next_extra = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const char32_t cp = self ? static_cast<char32_t>(b) : next_extra++;
    AppendUtf8(cp, byte_to_utf8[b]);
    unicode_to_byte[cp] = static_cast<int16_t>(b);
  }
}

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet* alphabet = new ByteAlphabet();
  return *alphabet;
}

}  // namespace sluice::model::bpe_internal
