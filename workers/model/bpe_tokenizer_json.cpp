// Loading a BpeTokenizer from tokenizer.json (FromJson, FromFile, FromDirectory; declared in
// bpe_tokenizer.h): each section of the file (normalizer, pre_tokenizer, model, added_tokens,
// post_processor, decoder) checked and read into BpeTokenizer::Impl, then the id tables built and
// bos/eos/pad resolved. What is accepted and refused is listed in bpe_tokenizer.h.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "common/file/read_file.h"
#include "common/json/json_depth.h"
#include "common/status.h"
#include "common/utf8.h"
#include "workers/model/bpe_byte_alphabet.h"
#include "workers/model/bpe_pre_tokenizer.h"
#include "workers/model/bpe_tokenizer.h"
#include "workers/model/bpe_tokenizer_impl.h"

namespace sluice::model {
namespace {

using bpe_internal::AddedToken;
using bpe_internal::Alphabet;
using bpe_internal::ByteAlphabet;
using bpe_internal::ByteLevelStep;
using bpe_internal::kGpt2Pattern;
using bpe_internal::MergeRule;
using bpe_internal::PairKey;
using bpe_internal::Regex;
using bpe_internal::SplitBehavior;
using bpe_internal::SplitStep;
using bpe_internal::Utf8CharLen;
using nlohmann::json;

// Ids above this are refused: the tables are indexed by id, and a hostile 46-byte file naming id
// 2^24 made the loader allocate 1.1 GB (found by tests/fuzz/tokenizer_json_fuzz.cpp). Eight times
// the largest vocabulary in use (Gemma's 262,144), about 70 MB of tables at most.
constexpr int64_t kMaxTokenId = (int64_t{1} << 21) - 1;

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

}  // namespace

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

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromJson(std::string_view text,
                                                             const BpeSpecialNames& names) {
  if (const std::optional<size_t> at = FirstTooDeepJson(text)) {
    return Status::InvalidArgument("tokenizer.json nests deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                   std::to_string(*at) + ")");
  }
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
  SLUICE_ASSIGN_OR_RETURN(std::string text, file::ReadWholeFile(path.string()));
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
    SLUICE_ASSIGN_OR_RETURN(std::string text, file::ReadWholeFile(config_path.string()));
    if (const std::optional<size_t> at = FirstTooDeepJson(text)) {
      return Status::InvalidArgument(config_path.string() + " nests deeper than " +
                                     std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                     std::to_string(*at) + ")");
    }
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

}  // namespace sluice::model
