// The GPT-2 byte-to-unicode alphabet of byte-level BPE: every byte stands for a visible
// character, so that a vocabulary of strings can spell any byte sequence. The ByteLevel
// pre-tokenizer maps text bytes into this alphabet (bpe_pre_tokenizer.cpp); the ByteLevel decoder
// maps token texts back to bytes (BpeTokenizer::Impl::BuildTables). Internal to the bpe_*.cpp
// files.
//
// Bytes that are printable and not whitespace in Latin-1 ('!'..'~', U+00A1..U+00AC,
// U+00AE..U+00FF) stand for themselves; the other 68 bytes, in increasing order, take the code
// points U+0100, U+0101, ... so that every byte is a visible character.
//
// Thread safety: Alphabet() builds the table once, on first use, and it is immutable after;
// any thread may read it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace sluice::model::bpe_internal {

struct ByteAlphabet {
  // Byte -> the UTF-8 text of its character.
  std::array<std::string, 256> byte_to_utf8;
  // Code point -> byte, for code points below 0x100 + 68; -1 where the point is not used.
  std::array<int16_t, 0x144> unicode_to_byte;

  ByteAlphabet();
};

// The one table, never destroyed.
const ByteAlphabet& Alphabet();

}  // namespace sluice::model::bpe_internal
