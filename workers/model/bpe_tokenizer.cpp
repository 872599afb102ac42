#include "workers/model/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <variant>

#include "common/utf8.h"

namespace sluice::model {
namespace {

using nlohmann::json;

// Ids above this are refused: a hostile file must not make us allocate gigabytes.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;
// Words up to this many bytes have their BPE result cached.
constexpr size_t kMaxCachedWordBytes = 64;
// The cache is cleared when it reaches this many words.
constexpr size_t kMaxCacheEntries = 1 << 18;

// The pre-tokenizer pattern of GPT-2, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// ---- UTF-8 ----

// Length of the well-formed UTF-8 sequence at s[i], or 1 for a byte that does not start one (it
// then stands alone, as a byte token).
size_t Utf8CharLen(std::string_view s, size_t i) {
  return std::max<size_t>(1, ValidUtf8Length(s, i));
}

// ---- The GPT-2 byte-to-unicode alphabet ----
//
// Bytes that are printable and not whitespace in Latin-1 ('!'..'~', U+00A1..U+00AC,
// U+00AE..U+00FF) stand for themselves; the other 68 bytes, in increasing order, take the code
// points U+0100, U+0101, ... so that every byte is a visible character.
struct ByteAlphabet {
  std::array<std::string, 256> byte_to_utf8;
  // Code point -> byte, for code points below 0x100 + 68; -1 where the point is not used.
  std::array<int16_t, 0x144> unicode_to_byte;

  ByteAlphabet() {
    unicode_to_byte.fill(-1);
    char32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = self ? static_cast<char32_t>(b) : next_extra++;
      AppendUtf8(cp, byte_to_utf8[b]);
      unicode_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet* alphabet = new ByteAlphabet();
  return *alphabet;
}

// ---- PCRE2 ----

class Regex {
 public:
  static Result<std::unique_ptr<Regex>> Compile(std::string_view pattern) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      std::array<PCRE2_UCHAR, 256> buf{};
      pcre2_get_error_message(error, buf.data(), buf.size());
      return Status::InvalidArgument("regex does not compile at offset " +
                                     std::to_string(error_offset) + ": " +
                                     reinterpret_cast<const char*>(buf.data()));
    }
    // JIT is an optimisation only: without it (or where it fails) the interpreter runs.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return std::unique_ptr<Regex>(new Regex(code));
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [begin, end) of every non-empty match of `s`, left to right, not overlapping. A
  // match error (a resource limit) ends the search: the rest of `s` is then one gap, which keeps
  // every byte.
  void FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t offset = 0;
    while (offset < s.size()) {
      int rc = pcre2_match(code_, subject, s.size(), offset, 0, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, s.size(), offset, PCRE2_NO_JIT, md, nullptr);
      }
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      if (ov[1] > ov[0]) {
        out.emplace_back(ov[0], ov[1]);
        offset = ov[1];
      } else {
        offset = ov[0] + 1;
        while (offset < s.size() && (static_cast<uint8_t>(s[offset]) & 0xC0) == 0x80) ++offset;
      }
    }
    pcre2_match_data_free(md);
  }

 private:
  explicit Regex(pcre2_code* code) : code_(code) {}
  pcre2_code* code_;
};

// ---- Pre-tokenizer steps ----

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
  std::unique_ptr<Regex> regex;  // Null for a literal pattern.
  std::string literal;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct ByteLevelStep {
  bool add_prefix_space = false;
  std::unique_ptr<Regex> regex;  // The GPT-2 pattern when use_regex; else null.
};

using PreTokenizerStep = std::variant<SplitStep, ByteLevelStep>;

struct Segment {
  size_t begin;
  size_t end;
  bool is_match;
};

// Cuts a piece of `size` bytes at `matches` into the non-empty segments the behavior says (the
// same rules as the HF library's SplitDelimiterBehavior), stored in `result`.
void SplitSegments(size_t size, const std::vector<std::pair<size_t, size_t>>& matches,
                   SplitBehavior behavior, bool invert, std::vector<Segment>& result) {
  std::vector<Segment> segs;
  size_t last = 0;
  for (const auto& [b, e] : matches) {
    if (b > last) segs.push_back({last, b, invert});
    segs.push_back({b, e, !invert});
    last = e;
  }
  if (last < size) segs.push_back({last, size, invert});

  result.clear();
  switch (behavior) {
    case SplitBehavior::kIsolated:
      result = std::move(segs);
      break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segs) {
        if (!s.is_match) result.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.is_match && !previous_match && !result.empty()) {
          result.back().end = s.end;
        } else {
          result.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool next_match = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->is_match && !next_match && !result.empty()) {
          result.back().begin = it->begin;
        } else {
          result.push_back(*it);
        }
        next_match = it->is_match;
      }
      std::reverse(result.begin(), result.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.is_match && previous_match && !result.empty()) {
          result.back().end = s.end;
        } else {
          result.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  std::erase_if(result, [](const Segment& s) { return s.end <= s.begin; });
}

// ---- JSON helpers ----

std::string TypeOf(const json& j) {
  if (!j.is_object()) return {};
  auto it = j.find("type");
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

Status Unsupported(std::string_view what, std::string_view type, const std::string& field) {
  return Status::InvalidArgument(
      "unsupported " + std::string(what) + " type \"" + std::string(type) + "\"", field);
}

Result<bool> OptionalBool(const json& obj, const char* key, bool fallback,
                          const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return Status::InvalidArgument("must be a boolean", field + "." + key);
  return it->get<bool>();
}

// A special-token name from tokenizer_config.json: a string, {"content": string}, or null.
Result<std::optional<std::string>> ConfigTokenName(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return std::optional<std::string>(c->get<std::string>());
  }
  return Status::InvalidArgument("must be a string, {\"content\": string} or null",
                                 std::string("tokenizer_config.json.") + key);
}

Result<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Internal("cannot read " + path.string());
  return ss.str();
}

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool IsWordByte(char c) {
  const auto b = static_cast<uint8_t>(c);
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         b >= 0x80;
}

// "<0xAB>" -> 0xAB.
std::optional<uint8_t> ParseByteToken(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return std::nullopt;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    int d = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = v * 16 + d;
  }
  return static_cast<uint8_t>(v);
}

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

struct MergeRule {
  int32_t rank;
  int32_t merged;
};

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

// ---- The tokenizer ----

struct BpeTokenizer::Impl {
  // Pre-tokenizer.
  std::vector<PreTokenizerStep> steps;

  // Model.
  StringMap<int32_t> vocab;
  std::unordered_map<uint64_t, MergeRule> merges;
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::array<int32_t, 256> byte_fallback_ids{};  // -1 where <0xAB> is missing.

  // Added tokens, and for each first byte the indices of those starting with it, longest first.
  std::vector<AddedToken> added;
  std::array<std::vector<uint32_t>, 256> added_by_first_byte;
  StringMap<int32_t> added_ids;

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
  mutable StringMap<std::vector<int32_t>> cache;

  Status ParseNormalizer(const json& j, const std::string& field);
  Status ParsePreTokenizer(const json& j, const std::string& field);
  Status ParseModel(const json& j);
  Status ParseAddedTokens(const json& j);
  Status ParsePostProcessor(const json& j, const std::string& field);
  Status ParseDecoder(const json& j, const std::string& field);
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

Status BpeTokenizer::Impl::ParseNormalizer(const json& j, const std::string& field) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  if (type == "NFC") return Status::Ok();  // Identity; see the header.
  if (type == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) {
      return Status::InvalidArgument("must be an array", field + ".normalizers");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          ParseNormalizer((*it)[i], field + ".normalizers[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unsupported("normalizer", type, field + ".type");
}

Status BpeTokenizer::Impl::ParsePreTokenizer(const json& j, const std::string& field) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) {
      return Status::InvalidArgument("must be an array", field + ".pretokenizers");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          ParsePreTokenizer((*it)[i], field + ".pretokenizers[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  if (type == "Split") {
    SplitStep step;
    auto pattern = j.find("pattern");
    if (pattern == j.end() || !pattern->is_object()) {
      return Status::InvalidArgument("must be {\"Regex\": ...} or {\"String\": ...}",
                                     field + ".pattern");
    }
    if (auto r = pattern->find("Regex"); r != pattern->end() && r->is_string()) {
      auto regex = Regex::Compile(r->get<std::string>());
      if (!regex.ok()) {
        return Status::InvalidArgument(regex.status().message(), field + ".pattern.Regex");
      }
      step.regex = std::move(regex).value();
    } else if (auto s = pattern->find("String"); s != pattern->end() && s->is_string()) {
      step.literal = s->get<std::string>();
      if (step.literal.empty()) {
        return Status::InvalidArgument("must not be empty", field + ".pattern.String");
      }
    } else {
      return Status::InvalidArgument("must be {\"Regex\": ...} or {\"String\": ...}",
                                     field + ".pattern");
    }
    auto behavior = j.find("behavior");
    const std::string b =
        (behavior != j.end() && behavior->is_string()) ? behavior->get<std::string>() : "";
    if (b == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (b == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else if (b == "MergedWithPrevious") {
      step.behavior = SplitBehavior::kMergedWithPrevious;
    } else if (b == "MergedWithNext") {
      step.behavior = SplitBehavior::kMergedWithNext;
    } else if (b == "Contiguous") {
      step.behavior = SplitBehavior::kContiguous;
    } else {
      return Status::InvalidArgument("unsupported split behavior \"" + b + "\"",
                                     field + ".behavior");
    }
    SLUICE_ASSIGN_OR_RETURN(step.invert, OptionalBool(j, "invert", false, field));
    steps.emplace_back(std::move(step));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    ByteLevelStep step;
    SLUICE_ASSIGN_OR_RETURN(step.add_prefix_space,
                            OptionalBool(j, "add_prefix_space", false, field));
    SLUICE_ASSIGN_OR_RETURN(bool use_regex, OptionalBool(j, "use_regex", true, field));
    if (use_regex) {
      auto regex = Regex::Compile(kGpt2Pattern);
      if (!regex.ok()) return regex.status();
      step.regex = std::move(regex).value();
    }
    steps.emplace_back(std::move(step));
    return Status::Ok();
  }
  return Unsupported("pre_tokenizer", type, field + ".type");
}

Status BpeTokenizer::Impl::ParseModel(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("must be an object", "model");
  std::string type = TypeOf(j);
  if (type.empty() && j.contains("merges")) type = "BPE";
  if (type != "BPE") return Unsupported("model", type, "model.type");
  if (auto it = j.find("dropout"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() != 0.0) {
      return Status::InvalidArgument("BPE dropout is not supported", "model.dropout");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
      return Status::InvalidArgument(std::string("unsupported BPE option ") + key,
                                     std::string("model.") + key);
    }
  }
  SLUICE_ASSIGN_OR_RETURN(fuse_unk, OptionalBool(j, "fuse_unk", false, "model"));
  SLUICE_ASSIGN_OR_RETURN(byte_fallback, OptionalBool(j, "byte_fallback", false, "model"));
  SLUICE_ASSIGN_OR_RETURN(ignore_merges, OptionalBool(j, "ignore_merges", false, "model"));

  auto v = j.find("vocab");
  if (v == j.end() || !v->is_object()) {
    return Status::InvalidArgument("must be an object of token -> id", "model.vocab");
  }
  vocab.reserve(v->size());
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return Status::InvalidArgument("id of \"" + it.key() + "\" must be an integer",
                                     "model.vocab");
    }
    const auto id = it.value().get<int64_t>();
    if (id < 0 || id > kMaxTokenId) {
      return Status::InvalidArgument(
          "id " + std::to_string(id) + " of \"" + it.key() + "\" is out of range", "model.vocab");
    }
    vocab.emplace(it.key(), static_cast<int32_t>(id));
  }

  auto m = j.find("merges");
  if (m != j.end() && !m->is_null()) {
    if (!m->is_array()) return Status::InvalidArgument("must be an array", "model.merges");
    merges.reserve(m->size());
    for (size_t i = 0; i < m->size(); ++i) {
      const json& e = (*m)[i];
      const std::string field = "model.merges[" + std::to_string(i) + "]";
      std::string a;
      std::string b;
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
          return Status::InvalidArgument("must be two tokens separated by one space", field);
        }
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        a = e[0].get<std::string>();
        b = e[1].get<std::string>();
      } else {
        return Status::InvalidArgument("must be \"a b\" or [\"a\", \"b\"]", field);
      }
      auto ia = vocab.find(a);
      auto ib = vocab.find(b);
      auto im = vocab.find(a + b);
      if (ia == vocab.end() || ib == vocab.end() || im == vocab.end()) {
        return Status::InvalidArgument(
            "merge of \"" + a + "\" and \"" + b + "\" uses a token missing from the vocabulary",
            field);
      }
      // A repeated pair keeps its first (best) rank.
      merges.emplace(PairKey(ia->second, ib->second),
                     MergeRule{static_cast<int32_t>(i), im->second});
    }
  }

  if (auto u = j.find("unk_token"); u != j.end() && !u->is_null()) {
    if (!u->is_string()) return Status::InvalidArgument("must be a string", "model.unk_token");
    auto it = vocab.find(u->get<std::string>());
    if (it == vocab.end()) {
      return Status::InvalidArgument("\"" + u->get<std::string>() + "\" is not in the vocabulary",
                                     "model.unk_token");
    }
    unk_id = it->second;
  }
  byte_fallback_ids.fill(-1);
  if (byte_fallback) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      if (auto it = vocab.find(name); it != vocab.end()) byte_fallback_ids[b] = it->second;
    }
  }
  return Status::Ok();
}

Status BpeTokenizer::Impl::ParseAddedTokens(const json& j) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_array()) return Status::InvalidArgument("must be an array", "added_tokens");
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::InvalidArgument("must be an object", field);
    AddedToken t;
    auto id = e.find("id");
    auto content = e.find("content");
    if (id == e.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        id->get<int64_t>() > kMaxTokenId) {
      return Status::InvalidArgument("must be an integer in range", field + ".id");
    }
    if (content == e.end() || !content->is_string() || content->get<std::string>().empty()) {
      return Status::InvalidArgument("must be a non-empty string", field + ".content");
    }
    t.id = static_cast<int32_t>(id->get<int64_t>());
    t.content = content->get<std::string>();
    SLUICE_ASSIGN_OR_RETURN(t.special, OptionalBool(e, "special", false, field));
    SLUICE_ASSIGN_OR_RETURN(t.lstrip, OptionalBool(e, "lstrip", false, field));
    SLUICE_ASSIGN_OR_RETURN(t.rstrip, OptionalBool(e, "rstrip", false, field));
    SLUICE_ASSIGN_OR_RETURN(t.single_word, OptionalBool(e, "single_word", false, field));
    added_ids[t.content] = t.id;
    added.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < added.size(); ++i) {
    added_by_first_byte[static_cast<uint8_t>(added[i].content[0])].push_back(i);
  }
  for (auto& list : added_by_first_byte) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return added[a].content.size() > added[b].content.size();
    });
  }
  return Status::Ok();
}

Status BpeTokenizer::Impl::ParsePostProcessor(const json& j, const std::string& field) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence") {
    auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) {
      return Status::InvalidArgument("must be an array", field + ".processors");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          ParsePostProcessor((*it)[i], field + ".processors[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  if (type == "TemplateProcessing") {
    auto single = j.find("single");
    if (single == j.end() || !single->is_array()) {
      return Status::InvalidArgument("must be an array", field + ".single");
    }
    const json empty = json::object();
    auto st = j.find("special_tokens");
    const json& specials = (st != j.end() && st->is_object()) ? *st : empty;
    bool seen_sequence = false;
    for (size_t i = 0; i < single->size(); ++i) {
      const json& item = (*single)[i];
      const std::string item_field = field + ".single[" + std::to_string(i) + "]";
      if (item.is_object() && item.contains("Sequence")) {
        if (seen_sequence) return Status::InvalidArgument("second sequence", item_field);
        seen_sequence = true;
        continue;
      }
      auto sp = item.is_object() ? item.find("SpecialToken") : item.end();
      if (!item.is_object() || sp == item.end() || !sp->is_object() || !sp->contains("id") ||
          !(*sp)["id"].is_string()) {
        return Status::InvalidArgument("must be {\"Sequence\": ...} or {\"SpecialToken\": ...}",
                                       item_field);
      }
      const std::string name = (*sp)["id"].get<std::string>();
      std::vector<int32_t> ids;
      auto def = specials.find(name);
      if (def != specials.end() && def->is_object() && def->contains("ids") &&
          (*def)["ids"].is_array()) {
        for (const json& id : (*def)["ids"]) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxTokenId) {
            return Status::InvalidArgument("bad id", field + ".special_tokens." + name);
          }
          ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
      } else if (auto id = Lookup(name)) {
        ids.push_back(*id);
      } else {
        return Status::InvalidArgument("special token \"" + name + "\" is not defined", item_field);
      }
      auto& target = seen_sequence ? suffix_ids : prefix_ids;
      target.insert(target.end(), ids.begin(), ids.end());
    }
    return Status::Ok();
  }
  return Unsupported("post_processor", type, field + ".type");
}

Status BpeTokenizer::Impl::ParseDecoder(const json& j, const std::string& field) {
  if (j.is_null()) return Status::Ok();
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") {
    decode_byte_level = true;
  } else if (type == "ByteFallback") {
    decode_byte_fallback = true;
  } else if (type == "Fuse") {
    // Joining is what Decode does anyway.
  } else if (type == "Sequence") {
    auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) {
      return Status::InvalidArgument("must be an array", field + ".decoders");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          ParseDecoder((*it)[i], field + ".decoders[" + std::to_string(i) + "]"));
    }
  } else {
    return Unsupported("decoder", type, field + ".type");
  }
  return Status::Ok();
}

Status BpeTokenizer::Impl::BuildTables() {
  int32_t size = 0;
  for (const auto& [text, id] : vocab) size = std::max(size, id + 1);
  for (const AddedToken& t : added) size = std::max(size, t.id + 1);
  id_text.assign(size, {});
  id_bytes.assign(size, {});
  id_flags.assign(size, 0);
  const ByteAlphabet& alphabet = Alphabet();
  for (const auto& [text, id] : vocab) {
    if (id_flags[id] & kDefined) {
      return Status::InvalidArgument("id " + std::to_string(id) + " is given to both \"" +
                                         id_text[id] + "\" and \"" + text + "\"",
                                     "model.vocab");
    }
    id_flags[id] = kDefined;
    id_text[id] = text;
    std::string& bytes = id_bytes[id];
    if (auto b = ParseByteToken(text); b && decode_byte_fallback) {
      bytes.push_back(static_cast<char>(*b));
    } else if (decode_byte_level) {
      for (size_t i = 0; i < text.size();) {
        const size_t len = Utf8CharLen(text, i);
        const char32_t cp = DecodeUtf8(text, i, len);
        if (cp < alphabet.unicode_to_byte.size() && alphabet.unicode_to_byte[cp] >= 0) {
          bytes.push_back(static_cast<char>(alphabet.unicode_to_byte[cp]));
        } else {
          bytes.append(text, i, len);
        }
        i += len;
      }
    } else {
      bytes = text;
    }
  }
  // Added tokens decode to their content, whatever the vocabulary holds under their id.
  for (const AddedToken& t : added) {
    id_flags[t.id] = kDefined | (t.special ? kSpecial : 0);
    id_text[t.id] = t.content;
    id_bytes[t.id] = t.content;
  }

  // Byte-level models must be able to spell every byte, or the round trip breaks.
  bool has_byte_level = false;
  for (const auto& step : steps) has_byte_level |= std::holds_alternative<ByteLevelStep>(step);
  if (has_byte_level && !byte_fallback && !unk_id) {
    for (int b = 0; b < 256; ++b) {
      if (!vocab.contains(alphabet.byte_to_utf8[b])) {
        return Status::InvalidArgument(
            "byte-level vocabulary lacks the symbol for byte " + std::to_string(b), "model.vocab");
      }
    }
  }
  return Status::Ok();
}

Status BpeTokenizer::Impl::ResolveNames(const BpeSpecialNames& names) {
  auto resolve = [&](const std::optional<std::string>& name, const char* role,
                     std::initializer_list<std::string_view> guesses,
                     std::optional<int32_t>& out) -> Status {
    if (name) {
      out = Lookup(*name);
      if (!out) {
        return Status::InvalidArgument(std::string(role) + " token \"" + *name +
                                       "\" is not in the vocabulary");
      }
      return Status::Ok();
    }
    for (std::string_view g : guesses) {
      if ((out = Lookup(g))) break;
    }
    return Status::Ok();
  };
  if (!names.bos && prefix_ids.size() == 1) {
    bos = prefix_ids[0];
  } else {
    SLUICE_RETURN_IF_ERROR(resolve(names.bos, "bos", {"<|begin_of_text|>", "<s>", "<bos>"}, bos));
  }
  SLUICE_RETURN_IF_ERROR(
      resolve(names.eos, "eos", {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"}, eos));
  SLUICE_RETURN_IF_ERROR(resolve(names.pad, "pad", {"<pad>", "<|pad|>", "[PAD]"}, pad));
  return Status::Ok();
}

void BpeTokenizer::Impl::ForEachPiece(size_t step, std::string_view piece,
                                      const std::function<void(std::string_view)>& emit) const {
  if (piece.empty()) return;
  if (step == steps.size()) {
    emit(piece);
    return;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Segment> segments;
  if (const auto* split = std::get_if<SplitStep>(&steps[step])) {
    if (split->regex) {
      split->regex->FindAll(piece, matches);
    } else {
      for (size_t at = piece.find(split->literal); at != std::string_view::npos;
           at = piece.find(split->literal, at + split->literal.size())) {
        matches.emplace_back(at, at + split->literal.size());
      }
    }
    SplitSegments(piece.size(), matches, split->behavior, split->invert, segments);
    for (const Segment& seg : segments) {
      ForEachPiece(step + 1, piece.substr(seg.begin, seg.end - seg.begin), emit);
    }
    return;
  }
  const auto& bl = std::get<ByteLevelStep>(steps[step]);
  std::string prefixed;
  if (bl.add_prefix_space && piece.front() != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (bl.regex) {
    bl.regex->FindAll(piece, matches);
    SplitSegments(piece.size(), matches, SplitBehavior::kIsolated, false, segments);
  } else {
    segments.push_back({0, piece.size(), false});
  }
  const ByteAlphabet& alphabet = Alphabet();
  std::string mapped;
  for (const Segment& seg : segments) {
    mapped.clear();
    for (size_t i = seg.begin; i < seg.end; ++i) {
      mapped += alphabet.byte_to_utf8[static_cast<uint8_t>(piece[i])];
    }
    ForEachPiece(step + 1, mapped, emit);
  }
}

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

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromJson(std::string_view text,
                                                             const BpeSpecialNames& names) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("tokenizer.json is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("tokenizer.json must be an object");
  auto impl = std::make_unique<Impl>();
  const json null_value;
  auto get = [&](const char* key) -> const json& {
    auto it = j.find(key);
    return it == j.end() ? null_value : *it;
  };
  try {
    // "truncation" and "padding" are the caller's business (they change no ids of a single
    // encode) and are ignored.
    SLUICE_RETURN_IF_ERROR(impl->ParseNormalizer(get("normalizer"), "normalizer"));
    SLUICE_RETURN_IF_ERROR(impl->ParsePreTokenizer(get("pre_tokenizer"), "pre_tokenizer"));
    SLUICE_RETURN_IF_ERROR(impl->ParseModel(get("model")));
    SLUICE_RETURN_IF_ERROR(impl->ParseAddedTokens(get("added_tokens")));
    SLUICE_RETURN_IF_ERROR(impl->ParsePostProcessor(get("post_processor"), "post_processor"));
    SLUICE_RETURN_IF_ERROR(impl->ParseDecoder(get("decoder"), "decoder"));
    SLUICE_RETURN_IF_ERROR(impl->BuildTables());
    SLUICE_RETURN_IF_ERROR(impl->ResolveNames(names));
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("tokenizer.json: ") + e.what());
  }
  return std::unique_ptr<BpeTokenizer>(new BpeTokenizer(std::move(impl)));
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromFile(const std::filesystem::path& path,
                                                             const BpeSpecialNames& names) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto tok = FromJson(text, names);
  if (!tok.ok()) return tok.status().WithContext(path.string());
  return tok;
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromDirectory(
    const std::filesystem::path& dir) {
  BpeSpecialNames names;
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(config_path));
    json config;
    try {
      config = json::parse(text);
    } catch (const json::exception& e) {
      return Status::InvalidArgument(config_path.string() + " is not valid JSON: " + e.what());
    }
    if (!config.is_object()) {
      return Status::InvalidArgument(config_path.string() + " must be an object");
    }
    SLUICE_ASSIGN_OR_RETURN(names.bos, ConfigTokenName(config, "bos_token"));
    SLUICE_ASSIGN_OR_RETURN(names.eos, ConfigTokenName(config, "eos_token"));
    SLUICE_ASSIGN_OR_RETURN(names.pad, ConfigTokenName(config, "pad_token"));
  }
  return FromFile(dir / "tokenizer.json", names);
}

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
