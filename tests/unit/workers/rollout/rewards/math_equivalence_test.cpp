#include "workers/rollout/rewards/math_equivalence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

namespace sluice::rollout {
namespace {

using nlohmann::json;

constexpr double kTolerance = 1e-6;

struct Pair {
  std::string answer;
  std::string reference;
};

TEST(MathEquivalentTest, EquivalentPairs) {
  const Pair pairs[] = {
      {"\\frac{1}{2}", "0.5"},
      {"\\boxed{42}", "42"},
      {"\\boxed{\\boxed{8}}", "8"},
      {"1,000", "1000"},
      {"1000000", "1,000,000"},
      {"1{,}000{,}000", "10^6"},
      {"1,\\!000", "1000"},
      {"\\$1,234.50", "1234.5"},
      {"-\\dfrac{3}{4}", "-0.75"},
      {"-\\frac{1}{2}", "-0.5"},
      {"\\frac{-1}{2}", "-1/2"},
      {"\\frac12", "1/2"},
      {"\\tfrac{3}{4}", "3/4"},
      {"3/4", "0.75"},
      {"x = 5", "5"},
      {"5.0", "5"},
      {"12.", "12"},
      {"$42$", "42"},
      {"\\(7\\)", "7"},
      {"\xE2\x88\x92"
       "3",
       "-3"},  // U+2212 MINUS SIGN.
      {"2^{10}", "1024"},
      {"2^{-1}", "0.5"},
      {"(-2)^3", "-8"},
      {"-2^2", "-4"},
      {"1.5e3", "1500"},
      {"2 \\times 10^{3}", "2000"},
      {"3 \\cdot 4", "12"},
      {"6 \\div 4", "1.5"},
      {"\\sqrt{16}", "4"},
      {"2\\sqrt{2}", "\\sqrt{8}"},
      {"\\sqrt[3]{27}", "3"},
      {"\\frac{\\sqrt{3}}{2}", "\\dfrac{\\sqrt3}{2}"},
      {"2\\pi", "6.283185307"},
      {"\\frac{1}{2}\\pi", "\\pi/2"},
      {"0.333333333", "1/3"},
      {"50\\%", "50"},
      {"50%", "0.5"},
      {"0.5", "50%"},
      {"5\\text{ cm}", "5"},
      {"90^\\circ", "90"},
      {"\\left( 3 \\right)", "3"},
      {"(1, 2)", "(1,2)"},
      {"(1, 2]", "\\left(1,2\\right]"},
      {"\\left(\\frac{1}{2}, -\\frac{3}{4}\\right)", "(0.5, -0.75)"},
      {"((1,2),(3,4))", "((1, 2), (3, 4))"},
      {"\\{1, 2, 3\\}", "\\{1,2,3\\}"},
      {"x = 1, y = 2", "x=1,y=2"},
      {"x = 1, y = 2", "1, 2"},
      {"(x, y) = (1, 2)", "(1, 2)"},
      {"x = 1,000", "1000"},
      // Symbolic answers that do not evaluate compare as cleaned text.
      {"\\frac{a}{b}", "\\dfrac{a}{b}"},
      {"x^{2}+1", "x^2 + 1"},
      {"y = 2x + 1", "2x+1"},
      {"\\text{(B)}", "(B)"},
  };
  static_assert(std::size(pairs) >= 30);
  for (const Pair& p : pairs) {
    EXPECT_TRUE(MathEquivalent(p.answer, p.reference, kTolerance))
        << p.answer << " vs " << p.reference;
  }
}

TEST(MathEquivalentTest, NonEquivalentPairs) {
  const Pair pairs[] = {
      {"0.5", "0.51"},
      {"1/3", "0.3"},
      {"12", "21"},
      {"-5", "5"},
      {"", "0"},
      {"0", ""},
      {"\\boxed{}", "0"},
      {"1,000", "1"},
      {"1,23", "123"},  // Not a grouped number: a list of two.
      {"3.14", "\\pi"},
      {"\\frac{1}{2}", "\\frac{1}{3}"},
      {"50%", "0.5%"},
      {"(1, 2)", "[1, 2]"},  // An open interval is not a closed one.
      {"(1, 2)", "(2, 1)"},
      {"(1, 2)", "(1, 2, 3)"},
      {"1, 2", "(1, 2)"},
      {"2\\frac{1}{2}", "2.5"},  // Mixed numbers are not read (see the header).
      {"2^{0.5}", "\\sqrt{2}"},  // Only integer exponents evaluate.
      {"x + 1", "1 + x"},
      {"x <= 5", "5"},  // An inequality is not an equation.
      {"\\sqrt{-4}", "2"},
      {"1/0", "0"},
      {"5 apples", "5"},
  };
  static_assert(std::size(pairs) >= 15);
  for (const Pair& p : pairs) {
    EXPECT_FALSE(MathEquivalent(p.answer, p.reference, kTolerance))
        << p.answer << " vs " << p.reference;
  }
}

TEST(MathEquivalentTest, ToleranceIsRelativeAboveOneAndAbsoluteBelow) {
  EXPECT_TRUE(MathEquivalent("1.05", "1", 0.1));
  EXPECT_FALSE(MathEquivalent("1.05", "1", 0.01));
  EXPECT_FALSE(MathEquivalent("1.000001", "1", 0));
  EXPECT_TRUE(MathEquivalent("1", "1.0", 0));
  EXPECT_TRUE(MathEquivalent("1000.5", "1000", 1e-3));  // 0.5 <= 1e-3 * 1000.
  EXPECT_FALSE(MathEquivalent("1002", "1000", 1e-3));
  EXPECT_TRUE(MathEquivalent("0.0005", "0", 1e-3));  // Absolute: 1e-3 * max(1, 0).
  EXPECT_FALSE(MathEquivalent("0.002", "0", 1e-3));
}

TEST(ParseMathValueTest, Values) {
  struct Case {
    std::string text;
    double want;
  };
  const Case cases[] = {
      {"42", 42},
      {"-3.5", -3.5},
      {"+7", 7},
      {".25", 0.25},
      {"1e-3", 0.001},
      {"1,234", 1234},
      {"-1,234,567.89", -1234567.89},
      {"50%", 50},
      {"50\\%", 50},
      {"3/4", 0.75},
      {"\\frac{3}{4}", 0.75},
      {"\\frac34", 0.75},
      {"\\frac{1}{2}+\\frac{1}{3}", 5.0 / 6},
      {"\\frac\\pi2", std::numbers::pi / 2},
      {"\\sqrt{2}", std::sqrt(2.0)},
      {"\\sqrt2", std::sqrt(2.0)},
      {"\\sqrt[3]{-8}", -2},
      {"2^{10}", 1024},
      {"2^10", 1024},  // Plain text: all the digits.
      {"2**3", 8},
      {"10^{-2}", 0.01},
      {"\\pi", std::numbers::pi},
      {"2(3+4)", 14},
      {"-(2)", -2},
      {"x = 5", 5},
      {"$\\left(3\\right)$", 3},
      {"5\\text{ cm}", 5},
      {"\\$ 20", 20},
      {"{{7}}", 7},
  };
  for (const Case& c : cases) {
    const std::optional<double> got = ParseMathValue(c.text);
    ASSERT_TRUE(got.has_value()) << c.text;
    EXPECT_NEAR(*got, c.want, 1e-12) << c.text;
  }
}

TEST(ParseMathValueTest, NotNumbers) {
  const std::string cases[] = {
      "",
      "x",
      "2x",
      "1/0",
      "\\frac{1}{0}",
      "(1, 2)",
      "1,23",
      "\\sqrt{-1}",
      "2^{0.5}",
      "2\\frac{1}{2}",
      "((((",
      "(1",
      "1)",
      "\\infty",
      "10^{100000}",
      "1e999",
      "2^^3",
      "\\frac{1}",
      "\\sqrt[2.5]{4}",
      "5!",
  };
  for (const std::string& c : cases) {
    EXPECT_FALSE(ParseMathValue(c).has_value()) << c << " = " << ParseMathValue(c).value_or(0);
  }
}

TEST(ParseMathValueTest, DeepNestingFailsWithoutCrashing) {
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_FALSE(ParseMathValue(deep).has_value());
  const std::string signs = std::string(100000, '-') + "1";
  EXPECT_FALSE(ParseMathValue(signs).has_value());
  const std::string shallow = std::string(20, '(') + "1" + std::string(20, ')');
  EXPECT_EQ(ParseMathValue(shallow), 1);
}

TEST(MathRewardTest, CreateReadsTolerance) {
  Result<std::unique_ptr<MathReward>> defaults = MathReward::Create(json::object());
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ((*defaults)->options().tolerance, 1e-6);
  EXPECT_EQ((*defaults)->name(), "math");

  Result<std::unique_ptr<MathReward>> loose = MathReward::Create(json{{"tolerance", 0.1}});
  ASSERT_TRUE(loose.ok()) << loose.status().ToString();
  EXPECT_EQ((*loose)->options().tolerance, 0.1);
  EXPECT_TRUE(MathReward::Create(json{{"tolerance", 0}}).ok());
}

TEST(MathRewardTest, BadOptionsNameTheField) {
  for (const json& bad :
       {json{{"tolerance", -1}}, json{{"tolerance", "small"}}, json{{"tolerance", nullptr}}}) {
    const Status s = MathReward::Create(bad).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_EQ(s.field(), "reward.options.tolerance") << bad.dump();
  }
  EXPECT_EQ(MathReward::Create(json{{"tolerance", -1}}).status().ToString(),
            "InvalidArgument: reward.options.tolerance: must be a finite number >= 0, got -1");
  EXPECT_EQ(MathReward::Create(json{{"tol", 1}}).status().field(), "reward.options.tol");
  EXPECT_EQ(MathReward::Create(json(3)).status().field(), "reward.options");
}

TEST(MathRewardTest, ScoresTheFinalAnswer) {
  const MathReward reward(MathReward::Options{});
  const json row = json::object();
  struct Case {
    std::string response;
    std::string answer;
    double score;
  };
  const Case cases[] = {
      {"We get 1/2 first, then simplify: \\boxed{\\frac{1}{2}}", "0.5", 1},
      {"The answer is 0.5.", "\\frac12", 1},
      {"<answer>x = 3</answer>", "3", 1},
      {"2 + 2 = 4, so the answer is $4$", "\\boxed{4}", 1},
      {"\\boxed{3}", "4", 0},
      {"I think it is 3 or 4", "4", 0},
  };
  for (const Case& c : cases) {
    const RewardOutcome out =
        reward.Score({.response = c.response, .answer = c.answer, .row = &row});
    EXPECT_EQ(out.score, c.score) << c.response;
    EXPECT_FALSE(out.error);
  }
  const RewardOutcome miss = reward.Score({.response = "\\boxed{3}", .answer = "4", .row = &row});
  EXPECT_EQ(miss.detail, "answer \"3\" is not equivalent to \"4\"");
}

TEST(MathRewardTest, ToleranceOptionApplies) {
  Result<std::unique_ptr<MathReward>> loose = MathReward::Create(json{{"tolerance", 0.01}});
  ASSERT_TRUE(loose.ok());
  const json row = json::object();
  EXPECT_EQ((*loose)->Score({.response = "\\boxed{3.14}", .answer = "\\pi", .row = &row}).score, 1);
  const MathReward strict(MathReward::Options{});
  EXPECT_EQ(strict.Score({.response = "\\boxed{3.14}", .answer = "\\pi", .row = &row}).score, 0);
}

}  // namespace
}  // namespace sluice::rollout
