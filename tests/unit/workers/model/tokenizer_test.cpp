// Tokenizers and chat templates: a byte-level BPE tokenizer.json built here (the 256 byte
// symbols, a few merges, a Qwen2-style split regex and ChatML special tokens), its byte-fallback
// and refused variants, the char tokenizer, and the templates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/utf8.h"
#include "workers/model/bpe_tokenizer.h"
#include "workers/model/char_tokenizer.h"
#include "workers/model/chat_template.h"

namespace sluice::model {
namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

constexpr std::string_view kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string Utf8(char32_t cp) {
  std::string out;
  AppendUtf8(cp, out);
  return out;
}

// The symbol of byte b in the GPT-2 byte-to-unicode alphabet, written out from its definition.
std::string ByteSymbol(int b) {
  auto self = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174; };
  if (self(b)) return Utf8(static_cast<char32_t>(b));
  int extra = 0;
  for (int x = 0; x < b; ++x) extra += self(x) ? 0 : 1;
  return Utf8(static_cast<char32_t>(256 + extra));
}

// Ids: byte b is id b (as its symbol); then the merges below; then the added tokens.
//   256 he  257 ll  258 hell  259 hello  260 Ġw  261 or  262 Ġwor  263 ld  264 Ġworld  265 el
//   266 <|endoftext|>  267 <|im_start|>  268 <|im_end|>  269 <think> (not special)
//   270 <|end|>
constexpr int32_t kHe = 256, kLl = 257, kHello = 259, kSpaceW = 260, kOr = 261, kLd = 263,
                  kSpaceWorld = 264, kEndOfText = 266, kImStart = 267, kImEnd = 268, kThink = 269,
                  kEnd = 270;

json TestTokenizerJson(bool array_merges = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteSymbol(b)] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"},   {"he", "ll"}, {"hell", "o"},  {"Ġ", "w"},
      {"o", "r"}, {"Ġw", "or"}, {"l", "d"},   {"Ġwor", "ld"}, {"e", "l"}};
  json merge_list = json::array();
  int32_t next = 256;
  for (const auto& [a, b] : merges) {
    vocab[a + b] = next++;
    if (array_merges) {
      merge_list.push_back(json::array({a, b}));
    } else {
      merge_list.push_back(a + " " + b);
    }
  }
  auto added = [](int id, const char* content, bool special) {
    return json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", special}};
  };
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       json::array({added(kEndOfText, "<|endoftext|>", true), added(kImStart, "<|im_start|>", true),
                    added(kImEnd, "<|im_end|>", true), added(kThink, "<think>", false),
                    added(kEnd, "<|end|>", true)})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({{{"type", "Split"},
                                        {"pattern", {{"Regex", kQwenPattern}}},
                                        {"behavior", "Isolated"},
                                        {"invert", false}},
                                       {{"type", "ByteLevel"},
                                        {"add_prefix_space", false},
                                        {"trim_offsets", false},
                                        {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges", merge_list}}}};
}

std::unique_ptr<BpeTokenizer> Load(const json& j, const BpeSpecialNames& names = {}) {
  auto tok = BpeTokenizer::FromJson(j.dump(), names);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

Status LoadError(const json& j) {
  auto tok = BpeTokenizer::FromJson(j.dump());
  return tok.ok() ? Status::Ok() : tok.status();
}

// Random valid UTF-8 mixing ASCII, whitespace, digits, Latin, CJK, emoji (with ZWJ and skin
// tones), combining marks, and sometimes a special-token text.
char32_t Cp(std::mt19937& rng, uint32_t lo, uint32_t hi) {
  return static_cast<char32_t>(std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
}

std::string RandomUtf8(std::mt19937& rng, bool with_specials) {
  static const std::vector<std::string> kSpecials = {"<|im_start|>", "<|im_end|>", "<|endoftext|>",
                                                     "<think>", "<|end|>"};
  std::uniform_int_distribution<int> kind(0, 12);
  std::uniform_int_distribution<int> len(0, 40);
  std::string s;
  const int n = len(rng);
  for (int i = 0; i < n; ++i) {
    switch (kind(rng)) {
      case 0:
      case 1:
      case 2:
        s += static_cast<char>(std::uniform_int_distribution<int>(0x20, 0x7E)(rng));
        break;
      case 3:
        s += " \n\t\r"[std::uniform_int_distribution<int>(0, 3)(rng)];
        break;
      case 4:
        s += static_cast<char>('0' + std::uniform_int_distribution<int>(0, 9)(rng));
        break;
      case 5:
        s += Utf8(Cp(rng, 0xA0, 0x24F));
        break;
      case 6:
        s += Utf8(Cp(rng, 0x4E00, 0x9FFF));
        break;
      case 7:
        s += Utf8(Cp(rng, 0x1F300, 0x1FAFF));
        break;
      case 8:
        s += Utf8(0x1F469) + Utf8(0x1F3FD) + Utf8(0x200D) + Utf8(0x1F4BB);
        break;
      case 9:
        s += "e" + Utf8(Cp(rng, 0x300, 0x36F));
        break;
      case 10:
        s += Utf8(Cp(rng, 0x600, 0x6FF));
        break;
      case 11:
        s += "hello world";
        break;
      case 12:
        if (with_specials) s += kSpecials[std::uniform_int_distribution<size_t>(0, 4)(rng)];
        break;
    }
  }
  return s;
}

std::string RandomBytes(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(0, 60);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s;
  const int n = len(rng);
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(byte(rng)));
  return s;
}

TEST(BpeTokenizerTest, EncodesKnownStringsToHandComputedIds) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 271);
  EXPECT_EQ(tok->Encode("hello world"), (Ids{kHello, kSpaceWorld}));
  // "Hello": only l+l merges (no "H e" rule, "e ll" is no rule).
  EXPECT_EQ(tok->Encode("Hello World"), (Ids{'H', 'e', kLl, 'o', ' ', 'W', kOr, kLd}));
  // Rank decides, not position: "l l" (rank 1) beats "e l" (rank 9).
  EXPECT_EQ(tok->Encode("ell"), (Ids{'e', kLl}));
  // Equal ranks: leftmost first.
  EXPECT_EQ(tok->Encode("lll"), (Ids{kLl, 'l'}));
  EXPECT_EQ(tok->Encode("hel"), (Ids{kHe, 'l'}));
  // The split regex: digits one by one; a run of spaces leaves its last one to the next word.
  EXPECT_EQ(tok->Encode("2024"), (Ids{'2', '0', '2', '4'}));
  EXPECT_EQ(tok->Encode("hello  world"), (Ids{kHello, ' ', kSpaceWorld}));
  EXPECT_EQ(tok->Encode(" w"), (Ids{kSpaceW}));
  EXPECT_EQ(tok->Encode(""), Ids{});
  // Newline is byte 10, whose symbol is "Ċ".
  EXPECT_EQ(tok->TokenText(10), "\xC4\x8A");
  EXPECT_EQ(tok->TokenId("\xC4\xA0world"), kSpaceWorld);
  EXPECT_EQ(tok->Decode(Ids{kHello, kSpaceWorld}), "hello world");
}

TEST(BpeTokenizerTest, PreTokenizesLikeTheQwenRegex) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  const std::string sp = "\xC4\xA0";  // Ġ
  const std::string nl = "\xC4\x8A";  // Ċ
  EXPECT_EQ(tok->PreTokenize("Hello, world! 123  x\n\ny I'M"),
            (std::vector<std::string>{"Hello", ",", sp + "world", "!", sp, "1", "2", "3", sp,
                                      sp + "x", nl + nl, "y", sp + "I", "'M"}));
}

TEST(BpeTokenizerTest, MergesInArrayFormGiveTheSameIds) {
  auto a = Load(TestTokenizerJson(false));
  auto b = Load(TestTokenizerJson(true));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const std::string s = RandomUtf8(rng, true);
    EXPECT_EQ(a->Encode(s), b->Encode(s));
  }
}

TEST(BpeTokenizerTest, RandomUtf8RoundTrips) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    const std::string s = RandomUtf8(rng, true);
    const Ids ids = tok->Encode(s);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size());
    ASSERT_EQ(tok->Decode(ids), s) << "input #" << i;
    ASSERT_EQ(tok->Decode(tok->EncodeOrdinary(s)), s) << "input #" << i;
  }
}

TEST(BpeTokenizerTest, InvalidBytesRoundTrip) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(43);
  for (int i = 0; i < 2000; ++i) {
    const std::string s = RandomBytes(rng);
    ASSERT_EQ(tok->Decode(tok->Encode(s)), s) << "input #" << i;
  }
  // Stray continuation bytes, an overlong form, a surrogate and a truncated sequence between
  // words.
  const std::string s = "hello\x80\xBF world\xC0\xAF\xED\xA0\x80x\xF0\x9F\x98";
  const Ids ids = tok->Encode(s);
  EXPECT_EQ(ids[0], kHello);
  EXPECT_EQ(tok->Decode(ids), s);
  // Every byte alone.
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    EXPECT_EQ(tok->Encode(one), (Ids{b}));
  }
}

TEST(BpeTokenizerTest, SpecialTokensAreSingleIdsAndNeverSplit) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("<|im_start|>user\nhi<|im_end|>"),
            (Ids{kImStart, 'u', 's', 'e', 'r', '\n', 'h', 'i', kImEnd}));
  // Longest match among tokens sharing a prefix.
  EXPECT_EQ(tok->Encode("<|endoftext|><|end|>"), (Ids{kEndOfText, kEnd}));
  // Glued to words on both sides.
  EXPECT_EQ(tok->Encode("hello<|im_end|>hello"), (Ids{kHello, kImEnd, kHello}));
  // An incomplete marker is ordinary text.
  const Ids partial = tok->Encode("<|im_end");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), kImEnd), 0);
  // EncodeOrdinary spells special markers out but still matches non-special added tokens.
  const Ids ordinary = tok->EncodeOrdinary("<|im_end|><think>");
  EXPECT_EQ(std::count(ordinary.begin(), ordinary.end(), kImEnd), 0);
  EXPECT_EQ(ordinary.back(), kThink);
  EXPECT_EQ(tok->Decode(ordinary), "<|im_end|><think>");

  EXPECT_TRUE(tok->IsSpecial(kImEnd));
  EXPECT_FALSE(tok->IsSpecial(kThink));
  EXPECT_FALSE(tok->IsSpecial(kHello));
  EXPECT_EQ(tok->TokenId("<|im_start|>"), kImStart);
  EXPECT_EQ(tok->TokenText(kImStart), "<|im_start|>");
  EXPECT_EQ(tok->TokenId("<nope>"), std::nullopt);
  EXPECT_EQ(tok->Decode(Ids{kImStart, 'h', 'i', kThink, kImEnd}, /*skip_special=*/true),
            "hi<think>");
  // Unknown ids decode to nothing.
  EXPECT_EQ(tok->Decode(Ids{-1, 100000, 'a'}), "a");
}

TEST(BpeTokenizerTest, SpecialRolesFromNamesOrGuesses) {
  auto guessed = Load(TestTokenizerJson());
  ASSERT_NE(guessed, nullptr);
  EXPECT_EQ(guessed->eos_id(), kEndOfText);
  EXPECT_EQ(guessed->bos_id(), std::nullopt);
  EXPECT_EQ(guessed->pad_id(), std::nullopt);
  // No template tokens: add_special adds nothing.
  EXPECT_EQ(guessed->Encode("hello", true), (Ids{kHello}));

  auto named =
      Load(TestTokenizerJson(), {.bos = std::nullopt, .eos = "<|im_end|>", .pad = "<|endoftext|>"});
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->eos_id(), kImEnd);
  EXPECT_EQ(named->pad_id(), kEndOfText);

  BpeSpecialNames absent;
  absent.eos = "<|eot_id|>";
  auto missing = BpeTokenizer::FromJson(TestTokenizerJson().dump(), absent);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("<|eot_id|>"), std::string::npos);
}

TEST(BpeTokenizerTest, TemplateProcessingAddsItsTokens) {
  json j = TestTokenizerJson();
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array(
           {{{"type", "ByteLevel"}, {"trim_offsets", false}},
            {{"type", "TemplateProcessing"},
             {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                     {{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}}})},
             {"pair", json::array()},
             {"special_tokens",
              {{"<|endoftext|>",
                {{"id", "<|endoftext|>"}, {"ids", {kEndOfText}}, {"tokens", {"<|endoftext|>"}}}},
               {"<|end|>", {{"id", "<|end|>"}, {"ids", {kEnd}}, {"tokens", {"<|end|>"}}}}}}}})}};
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hello", /*add_special=*/true), (Ids{kEndOfText, kHello, kEnd}));
  EXPECT_EQ(tok->Encode("hello"), (Ids{kHello}));
  EXPECT_EQ(tok->bos_id(), kEndOfText);
}

TEST(BpeTokenizerTest, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  json j = TestTokenizerJson();
  j["model"]["vocab"]["\xC4\xA0hi"] = 271;  // "Ġhi": no merge makes it.
  auto plain = Load(j);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Encode(" hi"), (Ids{' ', 'h', 'i'}));
  j["model"]["ignore_merges"] = true;
  auto ignoring = Load(j);
  ASSERT_NE(ignoring, nullptr);
  EXPECT_EQ(ignoring->Encode(" hi"), (Ids{271}));
  EXPECT_EQ(ignoring->Encode("hello world"), (Ids{kHello, kSpaceWorld}));
  EXPECT_EQ(ignoring->Decode(Ids{271}), " hi");
}

TEST(BpeTokenizerTest, LstripAndRstripAbsorbWhitespace) {
  json j = TestTokenizerJson();
  j["added_tokens"][4]["lstrip"] = true;  // <|end|>
  j["added_tokens"][4]["rstrip"] = true;
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hello  <|end|>\n hello"), (Ids{kHello, kEnd, kHello}));
}

TEST(BpeTokenizerTest, Llama3StyleDigitsAndGpt2ByteLevelRegex) {
  json j = TestTokenizerJson();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = kLlama3Pattern;
  auto llama = Load(j);
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->PreTokenize("12345"), (std::vector<std::string>{"123", "45"}));

  // GPT-2: ByteLevel alone with its built-in regex and a prefix space.
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  auto gpt2 = Load(j);
  ASSERT_NE(gpt2, nullptr);
  EXPECT_EQ(gpt2->Encode("hello world"), (Ids{' ', kHello, kSpaceWorld}));
  EXPECT_EQ(gpt2->PreTokenize("it's 42"), (std::vector<std::string>{"\xC4\xA0it", "'s",
                                                                    "\xC4\xA0"
                                                                    "42"}));
}

TEST(BpeTokenizerTest, SplitBehaviors) {
  auto with = [](const char* behavior, bool invert) {
    json j = TestTokenizerJson();
    j["pre_tokenizer"] = {{"type", "Split"},
                          {"pattern", {{"String", "-"}}},
                          {"behavior", behavior},
                          {"invert", invert}};
    return Load(j);
  };
  const std::string text = "the-final--countdown";
  using Pieces = std::vector<std::string>;
  EXPECT_EQ(with("Isolated", false)->PreTokenize(text),
            (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(with("Removed", false)->PreTokenize(text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(with("MergedWithPrevious", false)->PreTokenize(text),
            (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(with("MergedWithNext", false)->PreTokenize(text),
            (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(with("Contiguous", false)->PreTokenize(text),
            (Pieces{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(with("Removed", true)->PreTokenize(text), (Pieces{"-", "-", "-"}));
}

json ByteFallbackJson() {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    vocab[std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">"] = 1 + b;
  }
  vocab["a"] = 257;
  vocab["b"] = 258;
  vocab["c"] = 259;
  vocab[" "] = 260;
  vocab["ab"] = 261;
  vocab["\xC3\xA9"] = 262;  // é
  return json{
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"added_tokens", json::array({{{"id", 263}, {"content", "</s>"}, {"special", true}}})},
      {"post_processor", nullptr},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", json::array({{{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", json::array({"a b"})}}}};
}

TEST(BpeTokenizerTest, ByteFallbackSpellsUnknownCharactersAsBytes) {
  auto tok = Load(ByteFallbackJson());
  ASSERT_NE(tok, nullptr);
  // "ü" is U+00FC = C3 BC, not in the vocabulary: two byte tokens.
  EXPECT_EQ(tok->Encode("ab cü\xC3\xA9"), (Ids{261, 260, 259, 1 + 0xC3, 1 + 0xBC, 262}));
  EXPECT_EQ(tok->Encode("x</s>"), (Ids{1 + 'x', 263}));
  EXPECT_EQ(tok->eos_id(), 263);
  EXPECT_EQ(tok->Decode(Ids{261, 1 + 0xFF, 262}), "ab\xFF\xC3\xA9");
  std::mt19937 rng(44);
  for (int i = 0; i < 500; ++i) {
    const std::string s = i % 2 ? RandomBytes(rng) : RandomUtf8(rng, false);
    ASSERT_EQ(tok->Decode(tok->Encode(s)), s) << "input #" << i;
  }
}

// The engine decodes its output one token at a time for stop strings (Tokenizer's contract:
// decoding concatenates the tokens' bytes), so a sequence must decode to the concatenation of
// its tokens' decodes, byte-level and byte-fallback alike.
TEST(BpeTokenizerTest, DecodingConcatenatesTheTokensBytes) {
  std::mt19937 rng(45);
  for (const json& config : {TestTokenizerJson(), ByteFallbackJson()}) {
    auto tok = Load(config);
    ASSERT_NE(tok, nullptr);
    for (int i = 0; i < 300; ++i) {
      const Ids ids = tok->Encode(i % 2 ? RandomBytes(rng) : RandomUtf8(rng, true));
      std::string one_by_one;
      for (int32_t id : ids) one_by_one += tok->Decode(Ids{id});
      ASSERT_EQ(one_by_one, tok->Decode(ids)) << "input #" << i;
    }
  }
}

TEST(BpeTokenizerTest, UnknownCharactersWithoutByteFallbackBecomeUnk) {
  json j = ByteFallbackJson();
  j["model"]["byte_fallback"] = false;
  j["model"]["fuse_unk"] = true;
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("axyb"), (Ids{257, 0, 258}));
}

TEST(BpeTokenizerTest, RefusesUnsupportedConfigsNamingThem) {
  struct Case {
    std::string path;  // JSON pointer to replace.
    json value;
    std::string message;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"/pre_tokenizer",
       {{"type", "Metaspace"}, {"replacement", "▁"}},
       "unsupported pre_tokenizer type \"Metaspace\"",
       "pre_tokenizer.type"},
      {"/pre_tokenizer/pretokenizers/1",
       {{"type", "Whitespace"}},
       "unsupported pre_tokenizer type \"Whitespace\"",
       "pre_tokenizer.pretokenizers[1].type"},
      {"/normalizer",
       {{"type", "NFKC"}},
       "unsupported normalizer type \"NFKC\"",
       "normalizer.type"},
      {"/model/type", "Unigram", "unsupported model type \"Unigram\"", "model.type"},
      {"/model/type", "WordPiece", "unsupported model type \"WordPiece\"", "model.type"},
      {"/decoder",
       {{"type", "WordPiece"}},
       "unsupported decoder type \"WordPiece\"",
       "decoder.type"},
      {"/post_processor",
       {{"type", "RobertaProcessing"}},
       "unsupported post_processor type \"RobertaProcessing\"",
       "post_processor.type"},
      {"/model/dropout", 0.1, "dropout", "model.dropout"},
      {"/model/continuing_subword_prefix", "##", "continuing_subword_prefix",
       "model.continuing_subword_prefix"},
      {"/model/merges/3", "hell q", "missing from the vocabulary", "model.merges[3]"},
      {"/model/merges/2", "a b c", "two tokens", "model.merges[2]"},
      {"/pre_tokenizer/pretokenizers/0/pattern/Regex", "(unclosed", "regex",
       "pre_tokenizer.pretokenizers[0].pattern.Regex"},
      {"/pre_tokenizer/pretokenizers/0/behavior", "Sideways", "Sideways",
       "pre_tokenizer.pretokenizers[0].behavior"},
      {"/model/vocab/a", 99999999, "out of range", "model.vocab"},
      {"/model/vocab/a", 1 << 21, "out of range", "model.vocab"},
      {"/model/vocab/" + std::string("\xC4\x80"), nullptr, "", ""},  // Marker: removed below.
  };
  for (const Case& c : cases) {
    json j = TestTokenizerJson();
    if (c.value.is_null()) {
      // Remove the symbol of byte 0: a byte-level vocabulary must spell every byte.
      j["model"]["vocab"].erase(ByteSymbol(0));
      j["model"]["merges"] = json::array();
      const Status s = LoadError(j);
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("lacks the symbol for byte 0"), std::string::npos) << s.ToString();
      continue;
    }
    j[json::json_pointer(c.path)] = c.value;
    const Status s = LoadError(j);
    ASSERT_FALSE(s.ok()) << c.path;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
    EXPECT_EQ(s.field(), c.field) << s.ToString();
  }
  EXPECT_FALSE(BpeTokenizer::FromJson("{not json").ok());
  EXPECT_FALSE(BpeTokenizer::FromJson("[]").ok());
  const auto deep = BpeTokenizer::FromJson(R"({"model":)" + std::string(5000, '[') +
                                           std::string(5000, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nests deeper than"), std::string::npos);
  auto missing = BpeTokenizer::FromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(BpeTokenizerTest, LoadsFromADirectoryWithTokenizerConfig) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("sluice_tokenizer_test_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "tokenizer.json") << TestTokenizerJson().dump();
    std::ofstream(dir / "tokenizer_config.json")
        << json{{"bos_token", nullptr},
                {"eos_token", "<|im_end|>"},
                {"pad_token", {{"content", "<|endoftext|>"}, {"special", true}}}}
               .dump();
  }
  auto tok = BpeTokenizer::FromDirectory(dir);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->eos_id(), kImEnd);
  EXPECT_EQ((*tok)->pad_id(), kEndOfText);
  EXPECT_EQ((*tok)->bos_id(), std::nullopt);
}

TEST(BpeTokenizerTest, ConcurrentEncodesAgree) {
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(45);
  std::vector<std::string> inputs;
  for (int i = 0; i < 200; ++i) inputs.push_back(RandomUtf8(rng, true));
  std::vector<Ids> expected;
  for (const auto& s : inputs) expected.push_back(tok->Encode(s));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        for (size_t i = t; i < inputs.size(); ++i) {
          if (tok->Encode(inputs[i]) != expected[i]) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(CharTokenizerTest, IdsAndRoundTrip) {
  CharTokenizer tok;
  EXPECT_EQ(tok.vocab_size(), 264);
  EXPECT_EQ(tok.Encode("hi"), (Ids{'h', 'i'}));
  EXPECT_EQ(tok.Encode("hi", /*add_special=*/true), (Ids{257, 'h', 'i'}));
  EXPECT_EQ(tok.Encode("<|user|>\nx<|end|><eos><pad><bos>"),
            (Ids{260, '\n', 'x', 263, 258, 256, 257}));
  EXPECT_EQ(tok.EncodeOrdinary("<eos>"), (Ids{'<', 'e', 'o', 's', '>'}));
  EXPECT_EQ(tok.Encode("<|use"), (Ids{'<', '|', 'u', 's', 'e'}));
  EXPECT_EQ(tok.TokenId("<|assistant|>"), 261);
  EXPECT_EQ(tok.TokenId("a"), 'a');
  EXPECT_EQ(tok.TokenId("ab"), std::nullopt);
  EXPECT_EQ(tok.TokenText(262), "<|tool|>");
  EXPECT_EQ(tok.TokenText(0), std::string_view("\0", 1));
  EXPECT_EQ(tok.bos_id(), 257);
  EXPECT_EQ(tok.eos_id(), 258);
  EXPECT_EQ(tok.pad_id(), 256);
  EXPECT_TRUE(tok.IsSpecial(263));
  EXPECT_FALSE(tok.IsSpecial(255));
  EXPECT_EQ(tok.Decode(Ids{257, 'o', 'k', 258}, /*skip_special=*/true), "ok");
  EXPECT_EQ(tok.Decode(Ids{257, 'o', 'k', 258}), "<bos>ok<eos>");
  std::mt19937 rng(46);
  for (int i = 0; i < 1000; ++i) {
    const std::string s = i % 2 ? RandomBytes(rng) : RandomUtf8(rng, true);
    ASSERT_EQ(tok.Decode(tok.Encode(s)), s);
    ASSERT_EQ(tok.Decode(tok.EncodeOrdinary(s)), s);
  }
}

TEST(ChatTemplateTest, ChatMlRendersTheDocumentedString) {
  auto tmpl = ChatTemplate::ByName("chatml");
  ASSERT_TRUE(tmpl.ok());
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "hello world"}};
  auto text = tmpl->Render(messages, /*add_generation_prompt=*/true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nhello world<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(*tmpl->Render(messages, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello world<|im_end|>\n");
  EXPECT_EQ(tmpl->end_of_turn(), "<|im_end|>");

  // Encoded, the markers are single special ids.
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tmpl->CheckTokenizer(*tok).ok());
  const std::vector<ChatMessage> short_chat = {{"user", "hello world"}};
  EXPECT_EQ(tok->Encode(*tmpl->Render(short_chat, true)),
            (Ids{kImStart, 'u', 's', 'e', 'r', '\n', kHello, kSpaceWorld, kImEnd, '\n', kImStart,
                 'a',      's', 's', 'i', 's', 't',  'a',    'n',         't',    '\n'}));
}

TEST(ChatTemplateTest, Llama3RendersTheDocumentedString) {
  auto tmpl = ChatTemplate::ByName("llama3");
  ASSERT_TRUE(tmpl.ok());
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "  hi there \n"}};
  EXPECT_EQ(*tmpl->Render(messages, true),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nhi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(*tmpl->Render({}, false), "<|begin_of_text|>");
  EXPECT_EQ(tmpl->end_of_turn(), "<|eot_id|>");
  // The test tokenizer is ChatML: it lacks the Llama 3 markers.
  auto tok = Load(TestTokenizerJson());
  ASSERT_NE(tok, nullptr);
  const Status s = tmpl->CheckTokenizer(*tok);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("<|begin_of_text|>"), std::string::npos);
}

TEST(ChatTemplateTest, PlainWithTheCharTokenizer) {
  auto tmpl = ChatTemplate::ByName("plain");
  ASSERT_TRUE(tmpl.ok());
  CharTokenizer tok;
  EXPECT_TRUE(tmpl->CheckTokenizer(tok).ok());
  EXPECT_FALSE(ChatTemplate::ByName("chatml")->CheckTokenizer(tok).ok());
  const std::vector<ChatMessage> messages = {{"user", "2+2?"}, {"assistant", "4"}};
  const std::string text = *tmpl->Render(messages, false);
  EXPECT_EQ(text, "<|user|>\n2+2?<|end|>\n<|assistant|>\n4<|end|>\n");
  EXPECT_EQ(tok.Encode(text),
            (Ids{CharTokenizer::kUser, '\n', '2', '+', '2', '?', CharTokenizer::kEnd, '\n',
                 CharTokenizer::kAssistant, '\n', '4', CharTokenizer::kEnd, '\n'}));
  EXPECT_EQ(*tmpl->Render({}, true), "<|assistant|>\n");
  EXPECT_FALSE(tmpl->Render(std::vector<ChatMessage>{{"narrator", "x"}}, false).ok());
}

TEST(ChatTemplateTest, UnknownNamesAndBadRolesAreRefused) {
  auto unknown = ChatTemplate::ByName("jinja");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown chat template \"jinja\"; known templates: chatml, llama3, plain");
  EXPECT_EQ(ChatTemplate::KnownNames().size(), 3u);
  auto chatml = ChatTemplate::ByName("chatml");
  for (const char* role : {"", "user\n", "<|im_end|>", "us er"}) {
    auto r = chatml->Render(std::vector<ChatMessage>{{"user", "ok"}, {role, "x"}}, false);
    ASSERT_FALSE(r.ok()) << role;
    EXPECT_EQ(r.status().field(), "messages[1].role");
  }
  EXPECT_TRUE(chatml->Render(std::vector<ChatMessage>{{"tool", "x"}}, false).ok());
}

}  // namespace
}  // namespace sluice::model
