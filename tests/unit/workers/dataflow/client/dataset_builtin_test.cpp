#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "workers/dataflow/client/dataset.h"

namespace sluice::dataflow {
namespace {

// Wide enough that the reference evaluator itself cannot overflow (GCC extension).
__extension__ typedef __int128 Int128;

// ---- An independent evaluator for the generated expressions. ----

// Recursive descent over "number", + - * / and parentheses, with the usual precedence and left
// associativity. Records every operator's result so the test can check that all intermediate
// results are exact non-negative integers within bounds, and the parse tree, fully
// parenthesized, so the test can tell whether a pair of parentheses changes it.
class Evaluator {
 public:
  explicit Evaluator(const std::string& text) : s_(text) {}

  // nullopt (with error()) for malformed text or an inexact / by-zero division.
  std::optional<Int128> Evaluate() {
    const auto v = Sum();
    if (v.has_value() && pos_ != s_.size()) error_ = "trailing text at " + std::to_string(pos_);
    if (!error_.empty() || !v.has_value()) return std::nullopt;
    tree_ = v->tree;
    return v->value;
  }
  const std::string& error() const { return error_; }
  const std::string& tree() const { return tree_; }
  const std::vector<Int128>& intermediates() const { return intermediates_; }
  const std::vector<Int128>& operands() const { return operands_; }
  int operators() const { return static_cast<int>(intermediates_.size()); }
  int parentheses() const { return parentheses_; }

 private:
  struct Node {
    Int128 value;
    std::string tree;
  };

  void Spaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  std::optional<Node> Apply(const Node& l, char op, const Node& r) {
    Node out{0, "(" + l.tree + op + r.tree + ")"};
    switch (op) {
      case '+':
        out.value = l.value + r.value;
        break;
      case '-':
        out.value = l.value - r.value;
        break;
      case '*':
        out.value = l.value * r.value;
        break;
      default:
        if (r.value == 0 || l.value % r.value != 0) {
          error_ = "inexact division";
          return std::nullopt;
        }
        out.value = l.value / r.value;
    }
    intermediates_.push_back(out.value);
    return out;
  }
  std::optional<Node> Sum() {
    auto left = Product();
    for (;;) {
      Spaces();
      if (!left || pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return left;
      const char op = s_[pos_++];
      const auto right = Product();
      if (!right) return std::nullopt;
      left = Apply(*left, op, *right);
    }
  }
  std::optional<Node> Product() {
    auto left = Atom();
    for (;;) {
      Spaces();
      if (!left || pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) return left;
      const char op = s_[pos_++];
      const auto right = Atom();
      if (!right) return std::nullopt;
      left = Apply(*left, op, *right);
    }
  }
  std::optional<Node> Atom() {
    Spaces();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      ++pos_;
      ++parentheses_;
      const auto v = Sum();
      Spaces();
      if (!v || pos_ >= s_.size() || s_[pos_] != ')') {
        if (error_.empty()) error_ = "missing )";
        return std::nullopt;
      }
      ++pos_;
      return v;
    }
    const size_t start = pos_;
    Int128 v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ == start) {
      error_ = "expected a number at " + std::to_string(pos_);
      return std::nullopt;
    }
    operands_.push_back(v);
    return Node{v, s_.substr(start, pos_ - start)};
  }

  std::string s_;
  size_t pos_ = 0;
  std::string error_;
  std::string tree_;
  std::vector<Int128> intermediates_;
  std::vector<Int128> operands_;
  int parentheses_ = 0;
};

std::string ToText(Int128 v) {
  if (v < 0) return "-" + ToText(-v);
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

std::vector<PromptRow> Generate(const std::string& generator, int64_t count, int64_t max_operand,
                                uint64_t seed) {
  BuiltinDataset b;
  b.generator = generator;
  b.count = count;
  b.max_operand = max_operand;
  b.seed = seed;
  auto rows = GenerateBuiltinRows(b, "");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? std::move(rows).value() : std::vector<PromptRow>{};
}

// ---- Built-in generators. ----

TEST(DatasetBuiltinTest, ArithmeticIsDeterministicPerSeedAndDiffersAcrossSeeds) {
  const auto a = Generate("arithmetic", 300, 100, 7);
  const auto b = Generate("arithmetic", 300, 100, 7);
  const auto c = Generate("arithmetic", 300, 100, 8);
  ASSERT_EQ(a.size(), 300u);
  ASSERT_EQ(b.size(), 300u);
  ASSERT_EQ(c.size(), 300u);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].answer, b[i].answer);
    EXPECT_EQ(a[i].row, b[i].row);
    EXPECT_EQ(a[i].id, c[i].id);
    if (a[i].prompt != c[i].prompt) ++differ;
  }
  EXPECT_GT(differ, 250);
  // A larger count keeps the earlier rows.
  const auto longer = Generate("arithmetic", 400, 100, 7);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].prompt, longer[i].prompt);
}

TEST(DatasetBuiltinTest, ChainIsDeterministicPerSeedAndDiffersAcrossSeeds) {
  const auto a = Generate("arithmetic-chain", 200, 50, 1);
  const auto b = Generate("arithmetic-chain", 200, 50, 1);
  const auto c = Generate("arithmetic-chain", 200, 50, 2);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].row, b[i].row);
    if (a[i].prompt != c[i].prompt) ++differ;
  }
  EXPECT_GT(differ, 180);
}

TEST(DatasetBuiltinTest, ArithmeticAnswersAreCorrect) {
  for (const int64_t m : {1, 7, 100, 1000000000}) {
    SCOPED_TRACE("maxOperand " + std::to_string(m));
    const auto rows = Generate("arithmetic", 2000, m, 3);
    const std::regex re(R"(What is (\d+) ([-+*/]) (\d+)\? Answer with the number only\.)");
    std::set<char> ops;
    std::set<std::string> answers;
    for (size_t i = 0; i < rows.size(); ++i) {
      const PromptRow& r = rows[i];
      std::smatch match;
      ASSERT_TRUE(std::regex_match(r.prompt, match, re)) << r.prompt;
      const long long a = std::stoll(match[1]);
      const long long b = std::stoll(match[3]);
      const char op = match[2].str()[0];
      ops.insert(op);
      EXPECT_LE(a, m);
      EXPECT_LE(b, m);
      long long want = 0;
      switch (op) {
        case '+':
          want = a + b;
          break;
        case '-':
          want = a - b;
          EXPECT_GE(want, 0) << r.prompt;
          break;
        case '*':
          want = a * b;
          break;
        default:
          ASSERT_NE(b, 0) << r.prompt;
          EXPECT_EQ(a % b, 0) << r.prompt;
          want = a / b;
      }
      EXPECT_EQ(r.answer, std::to_string(want)) << r.prompt;
      answers.insert(r.answer);
      EXPECT_EQ(r.dataset, "arithmetic");
      EXPECT_EQ(r.row["prompt"], r.prompt);
      EXPECT_EQ(r.row["answer"], r.answer);
      EXPECT_EQ(r.row["id"], r.id);
      EXPECT_EQ(r.row["steps"], 1);
      EXPECT_EQ(r.row["expression"], match[1].str() + " " + op + " " + match[3].str());
    }
    EXPECT_EQ(ops.size(), 4u);
    EXPECT_GT(answers.size(), m == 1 ? 2u : 10u);
  }
  const auto rows = Generate("arithmetic", 50, 10, 0);
  EXPECT_EQ(rows[0].id, "arithmetic-000000");
  EXPECT_EQ(rows[42].id, "arithmetic-000042");
}

TEST(DatasetBuiltinTest, ChainAnswersAreCorrectWithIntegerIntermediates) {
  for (const int64_t m : {1, 2, 10, 100, 1000000000}) {
    SCOPED_TRACE("maxOperand " + std::to_string(m));
    const auto rows = Generate("arithmetic-chain", 2000, m, 11);
    const std::regex re(R"(Compute (.+)\. You may call the calculator tool\.)");
    std::set<int> steps_seen;
    std::set<char> ops_seen;
    int with_parentheses = 0;
    for (const PromptRow& r : rows) {
      std::smatch match;
      ASSERT_TRUE(std::regex_match(r.prompt, match, re)) << r.prompt;
      const std::string expression = match[1];
      EXPECT_EQ(r.row["expression"], expression);
      Evaluator ev(expression);
      const auto value = ev.Evaluate();
      ASSERT_TRUE(value.has_value()) << expression << ": " << ev.error();
      EXPECT_EQ(r.answer, ToText(*value)) << expression;
      EXPECT_EQ(r.row["answer"], r.answer);
      const int steps = r.row["steps"].get<int>();
      EXPECT_EQ(ev.operators(), steps) << expression;
      EXPECT_GE(steps, 2);
      EXPECT_LE(steps, 4);
      steps_seen.insert(steps);
      for (const Int128 v : ev.operands()) EXPECT_LE(v, m) << expression;
      for (const Int128 v : ev.intermediates()) {
        EXPECT_GE(v, 0) << expression;
        EXPECT_LE(v, static_cast<Int128>(m) * m) << expression;
      }
      if (ev.parentheses() > 0) ++with_parentheses;
      for (const char c : expression) {
        if (c == '+' || c == '-' || c == '*' || c == '/') ops_seen.insert(c);
      }
      EXPECT_EQ(r.dataset, "arithmetic-chain");
      EXPECT_EQ(r.id.rfind("arithmetic-chain-", 0), 0u) << r.id;
    }
    EXPECT_EQ(steps_seen, (std::set<int>{2, 3, 4}));
    EXPECT_EQ(ops_seen.size(), 4u);
    if (m >= 10) {
      EXPECT_GT(with_parentheses, 100);
    }
  }
}

TEST(DatasetBuiltinTest, ChainParenthesesAreNeeded) {
  // Dropping any one pair of parentheses changes the parse tree, so every pair is needed for
  // the text to compute the generator's intermediate results.
  const auto rows = Generate("arithmetic-chain", 500, 100, 5);
  int checked = 0;
  for (const PromptRow& r : rows) {
    const std::string e = r.row["expression"];
    Evaluator with(e);
    ASSERT_TRUE(with.Evaluate().has_value()) << e;
    for (size_t open = e.find('('); open != std::string::npos; open = e.find('(', open + 1)) {
      int depth = 0;
      size_t close = open;
      for (; close < e.size(); ++close) {
        if (e[close] == '(') ++depth;
        if (e[close] == ')' && --depth == 0) break;
      }
      ASSERT_LT(close, e.size()) << e;
      std::string stripped = e;
      stripped.erase(close, 1);
      stripped.erase(open, 1);
      Evaluator without(stripped);
      // An inexact division without them also shows they were needed.
      if (without.Evaluate().has_value()) {
        EXPECT_NE(with.tree(), without.tree()) << "unneeded parentheses in " << e;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(DatasetBuiltinTest, RejectsBadSettings) {
  BuiltinDataset b;
  b.generator = "calculus";
  EXPECT_EQ(GenerateBuiltinRows(b, "").status().field(), "spec.dataset.builtin.generator");
  b = {};
  b.count = 0;
  EXPECT_EQ(GenerateBuiltinRows(b, "").status().field(), "spec.dataset.builtin.count");
  b = {};
  b.max_operand = 0;
  EXPECT_EQ(GenerateBuiltinRows(b, "").status().field(), "spec.dataset.builtin.maxOperand");
  b = {};
  b.prompt_style = "essay";
  EXPECT_EQ(GenerateBuiltinRows(b, "").status().field(), "spec.dataset.builtin.promptStyle");
  for (const int64_t length : {0, 19}) {
    b = {};
    b.generator = "reverse";
    b.length = length;
    const Status s = GenerateBuiltinRows(b, "").status();
    EXPECT_EQ(s.field(), "spec.dataset.builtin.length") << length;
    EXPECT_NE(s.message().find("is outside [1, 18]"), std::string::npos) << s.ToString();
  }
}

// reverse: `length` digits 1..9, answered backwards, deterministic per seed, both styles.
TEST(DatasetBuiltinTest, ReverseAsksForTheDigitsBackwards) {
  BuiltinDataset b;
  b.generator = "reverse";
  b.count = 2000;
  b.length = 5;
  b.seed = 9;
  auto rows = GenerateBuiltinRows(b, "");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2000u);
  const std::regex question("Reverse the digits of ([1-9]{5})\\. Answer with the digits only\\.");
  std::map<char, int> first_digits;
  std::set<std::string> distinct;
  for (const PromptRow& r : *rows) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r.prompt, m, question)) << r.prompt;
    const std::string digits = m[1];
    EXPECT_EQ(r.answer, std::string(digits.rbegin(), digits.rend())) << r.prompt;
    EXPECT_EQ(r.row.value("digits", ""), digits);
    EXPECT_EQ(r.row.value("answer", ""), r.answer);
    EXPECT_EQ(r.dataset, "reverse");
    ++first_digits[digits[0]];
    distinct.insert(digits);
  }
  EXPECT_EQ((*rows)[0].id, "reverse-000000");
  // Every digit 1..9 appears (2000 draws: each about 222 times), never 0.
  EXPECT_EQ(first_digits.size(), 9u);
  EXPECT_EQ(first_digits.count('0'), 0u);
  for (const auto& [digit, n] : first_digits) EXPECT_GT(n, 150) << digit;
  EXPECT_GT(distinct.size(), 1900u);  // 59,049 strings of 5: few repeats.

  b.prompt_style = "equation";
  auto terse = GenerateBuiltinRows(b, "");
  ASSERT_TRUE(terse.ok());
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string digits = (*rows)[i].row.value("digits", "");
    EXPECT_EQ((*terse)[i].prompt, "rev " + digits + " =");
    EXPECT_EQ((*terse)[i].answer, (*rows)[i].answer);
  }
  b.seed = 10;
  auto other = GenerateBuiltinRows(b, "");
  ASSERT_TRUE(other.ok());
  int differ = 0;
  for (size_t i = 0; i < rows->size(); ++i) differ += (*other)[i].answer != (*rows)[i].answer;
  EXPECT_GT(differ, 1900);
}

// The equation style asks the same problems, with the same answers, in a few tokens.
TEST(DatasetBuiltinTest, EquationStyleAsksTheSameProblemsTersely) {
  for (const std::string generator : {"arithmetic", "arithmetic-chain"}) {
    SCOPED_TRACE(generator);
    BuiltinDataset b;
    b.generator = generator;
    b.count = 50;
    b.max_operand = 19;
    b.seed = 5;
    auto question = GenerateBuiltinRows(b, "");
    b.prompt_style = "equation";
    auto equation = GenerateBuiltinRows(b, "");
    ASSERT_TRUE(question.ok() && equation.ok());
    ASSERT_EQ(question->size(), equation->size());
    for (size_t i = 0; i < question->size(); ++i) {
      const PromptRow& q = (*question)[i];
      const PromptRow& e = (*equation)[i];
      EXPECT_EQ(e.answer, q.answer);
      ASSERT_GE(e.prompt.size(), 3u);
      EXPECT_EQ(e.prompt.substr(e.prompt.size() - 2), " =") << e.prompt;
      const std::string expression = e.prompt.substr(0, e.prompt.size() - 2);
      EXPECT_NE(q.prompt.find(" " + expression + (generator == "arithmetic" ? "?" : ".")),
                std::string::npos)
          << q.prompt << " vs " << e.prompt;
    }
  }
  BuiltinDataset b;
  b.max_operand = 19;
  b.operations = "*";
  b.prompt_style = "equation";
  b.count = 1;
  b.seed = 1;
  auto one = GenerateBuiltinRows(b, "");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(std::to_string(std::stoll((*one)[0].prompt.substr(0, (*one)[0].prompt.find(' '))) *
                           std::stoll((*one)[0].prompt.substr((*one)[0].prompt.find('*') + 2))),
            (*one)[0].answer)
      << (*one)[0].prompt;
}

}  // namespace
}  // namespace sluice::dataflow
