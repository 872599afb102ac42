// BPE merges (BpeTokenizer::Impl::MergeWord, EncodeWord): one pre-tokenized word turned into
// token ids by applying the model's merges in rank order, with byte fallback or unk for
// characters the vocabulary lacks, and a bounded cache of the results for short words. The
// merges themselves are read from tokenizer.json in bpe_tokenizer_json.cpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/model/bpe_tokenizer_impl.h"

namespace sluice::model {
namespace {

using bpe_internal::PairKey;
using bpe_internal::Utf8CharLen;

// Words up to this many bytes have their BPE result cached.
constexpr size_t kMaxCachedWordBytes = 64;
// The cache is cleared when it reaches this many words.
constexpr size_t kMaxCacheEntries = 1 << 18;

}  // namespace

void BpeTokenizer::Impl::MergeWord(std::string_view word, std::vector<int32_t>& out) const {
  // Initial symbols: one per character (a byte that is not valid UTF-8 is a character of its
  // own), with byte fallback or unk for characters the vocabulary lacks.
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  bool last_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t len = Utf8CharLen(word, i);
    const std::string_view ch = word.substr(i, len);
    i += len;
    if (auto it = vocab.find(ch); it != vocab.end()) {
      ids.push_back(it->second);
      last_unk = false;
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (char c : ch) all &= byte_fallback_ids[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : ch) ids.push_back(byte_fallback_ids[static_cast<uint8_t>(c)]);
        last_unk = false;
        continue;
      }
    }
    if (unk_id) {
      if (!(fuse_unk && last_unk)) ids.push_back(*unk_id);
      last_unk = true;
    }
    // Without unk the character cannot be represented and is dropped (as the HF library does
    // when it has no unk token); byte-level vocabularies are checked at load never to get here.
  }
  if (ids.size() < 2) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }

  // Doubly linked symbols; a min-heap of candidate merges (rank, left position). An entry is
  // stale when either symbol has changed since it was pushed; it is then skipped.
  const int n = static_cast<int>(ids.size());
  std::vector<int> prev(n);
  std::vector<int> next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left;
    int32_t right;
    int32_t merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    auto it = merges.find(PairKey(ids[pos], ids[next[pos]]));
    if (it != merges.end())
      heap.push({it->second.rank, pos, ids[pos], ids[next[pos]], it->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || ids[c.pos] != c.left) continue;
    const int right = next[c.pos];
    if (right < 0 || ids[right] != c.right) continue;
    ids[c.pos] = c.merged;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
}

void BpeTokenizer::Impl::EncodeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    if (auto it = vocab.find(word); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mu);
    if (auto it = cache.find(word); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  MergeWord(word, out);
  if (cacheable) {
    std::vector<int32_t> result(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
    std::unique_lock lock(cache_mu);
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(std::string(word), std::move(result));
  }
}

}  // namespace sluice::model
