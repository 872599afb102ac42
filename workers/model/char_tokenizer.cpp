#include "workers/model/char_tokenizer.h"

namespace sluice::model {
namespace {

// The texts of single bytes, for TokenText.
struct ByteTexts {
  std::array<char, 256> bytes{};
  ByteTexts() {
    for (int b = 0; b < 256; ++b) bytes[b] = static_cast<char>(b);
  }
};

const ByteTexts& Bytes() {
  static const ByteTexts* texts = new ByteTexts();
  return *texts;
}

}  // namespace

std::vector<int32_t> CharTokenizer::Encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() + 1);
  if (add_special) out.push_back(kBos);
  for (size_t i = 0; i < text.size();) {
    // Every special text starts with '<'; take the longest one that matches here.
    if (text[i] == '<') {
      int32_t best = -1;
      size_t best_len = 0;
      for (size_t k = 0; k < kSpecialTexts.size(); ++k) {
        const std::string_view s = kSpecialTexts[k];
        if (s.size() > best_len && text.substr(i, s.size()) == s) {
          best = static_cast<int32_t>(256 + k);
          best_len = s.size();
        }
      }
      if (best >= 0) {
        out.push_back(best);
        i += best_len;
        continue;
      }
    }
    out.push_back(static_cast<uint8_t>(text[i]));
    ++i;
  }
  return out;
}

std::vector<int32_t> CharTokenizer::EncodeOrdinary(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (char c : text) out.push_back(static_cast<uint8_t>(c));
  return out;
}

std::string CharTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    if (id >= 0 && id < 256) {
      out.push_back(static_cast<char>(id));
    } else if (id >= 256 && id < kVocabSize && !skip_special) {
      out += kSpecialTexts[id - 256];
    }
  }
  return out;
}

std::optional<int32_t> CharTokenizer::TokenId(std::string_view token) const {
  for (size_t k = 0; k < kSpecialTexts.size(); ++k) {
    if (token == kSpecialTexts[k]) return static_cast<int32_t>(256 + k);
  }
  if (token.size() == 1) return static_cast<uint8_t>(token[0]);
  return std::nullopt;
}

std::string_view CharTokenizer::TokenText(int32_t id) const {
  if (id >= 0 && id < 256) return {&Bytes().bytes[id], 1};
  if (id >= 256 && id < kVocabSize) return kSpecialTexts[id - 256];
  return {};
}

}  // namespace sluice::model
