#include "workers/model/bpe_tokenizer.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/model/bpe_tokenizer_impl.h"

namespace sluice::model {
namespace {

using bpe_internal::AddedToken;

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool IsWordByte(char c) {
  const auto b = static_cast<uint8_t>(c);
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         b >= 0x80;
}

}  // namespace

// ---- Added tokens, then the pre-tokenizer and merges on the text between them ----

void BpeTokenizer::Impl::EncodeChunk(std::string_view chunk, std::vector<int32_t>& out) const {
  if (chunk.empty()) return;
  ForEachPiece(0, chunk, [&](std::string_view piece) { EncodeWord(piece, out); });
}

std::vector<int32_t> BpeTokenizer::Impl::EncodeText(std::string_view text, bool match_special,
                                                    bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out.insert(out.end(), prefix_ids.begin(), prefix_ids.end());
  size_t pos = 0;   // Start of the text not yet encoded.
  size_t scan = 0;  // Where the search for the next added token resumes.
  while (scan <= text.size()) {
    // Leftmost, then longest, added token at or after `scan`.
    const AddedToken* found = nullptr;
    size_t at = scan;
    for (; at < text.size() && found == nullptr; ++at) {
      for (uint32_t idx : added_by_first_byte[static_cast<uint8_t>(text[at])]) {
        const AddedToken& t = added[idx];
        if (!match_special && t.special) continue;
        if (text.compare(at, t.content.size(), t.content) != 0) continue;
        if (t.single_word) {
          const size_t end = at + t.content.size();
          if ((at > 0 && IsWordByte(text[at - 1])) ||
              (end < text.size() && IsWordByte(text[end]))) {
            continue;
          }
        }
        found = &t;
        break;
      }
    }
    if (found == nullptr) break;
    --at;  // The loop stepped past the match.
    size_t chunk_end = at;
    if (found->lstrip) {
      while (chunk_end > pos && IsAsciiSpace(text[chunk_end - 1])) --chunk_end;
    }
    EncodeChunk(text.substr(pos, chunk_end - pos), out);
    out.push_back(found->id);
    size_t after = at + found->content.size();
    if (found->rstrip) {
      while (after < text.size() && IsAsciiSpace(text[after])) ++after;
    }
    pos = scan = after;
  }
  EncodeChunk(text.substr(pos), out);
  if (add_special) out.insert(out.end(), suffix_ids.begin(), suffix_ids.end());
  return out;
}

// ---- Public API ----

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text, bool add_special) const {
  return impl_->EncodeText(text, /*match_special=*/true, add_special);
}

std::vector<int32_t> BpeTokenizer::EncodeOrdinary(std::string_view text) const {
  return impl_->EncodeText(text, /*match_special=*/false, /*add_special=*/false);
}

std::string BpeTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  const auto size = static_cast<int32_t>(impl_->id_bytes.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= size) continue;
    if (skip_special && (impl_->id_flags[id] & Impl::kSpecial)) continue;
    out += impl_->id_bytes[id];
  }
  return out;
}

int32_t BpeTokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_text.size()); }

std::optional<int32_t> BpeTokenizer::TokenId(std::string_view token) const {
  return impl_->Lookup(token);
}

std::string_view BpeTokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->id_text[id];
}

bool BpeTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && (impl_->id_flags[id] & Impl::kSpecial);
}

std::optional<int32_t> BpeTokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> BpeTokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> BpeTokenizer::pad_id() const { return impl_->pad; }

std::vector<std::string> BpeTokenizer::PreTokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  impl_->ForEachPiece(0, text, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

}  // namespace sluice::model
