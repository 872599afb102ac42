#include "workers/rollout/environments/arithmetic_expression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace sluice::rollout {
namespace {

struct ValueCase {
  const char* expression;
  double expected;
};

TEST(EvaluateArithmetic, Values) {
  const ValueCase cases[] = {
      {"84", 84},           {"  7 ", 7},
      {"1+2*3", 7},         {"(1+2)*3", 9},
      {"12*(3+4)", 84},     {"10-4-3", 3},  // Left-associative.
      {"100/10/5", 2},      {"7/2", 3.5},
      {"2^10", 1024},       {"2^3^2", 512},  // Right-associative: 2^(3^2).
      {"(2^3)^2", 64},      {"-2^2", -4},    // Unary minus binds looser than ^...
      {"2^-1", 0.5},        {"-2*3", -6},    // ...and tighter than *.
      {"--3", 3},           {"+5", 5},
      {"3*-2", -6},         {"1 - -1", 2},
      {"7 % 3", 1},         {"-7 % 3", 2},  // Floored: the sign of the divisor.
      {"7 % -3", -2},       {"7.5 % 2", 1.5},
      {"6 % 3", 0},         {"3.25", 3.25},
      {".5", 0.5},          {"5.", 5},
      {"1e3", 1000},        {"1.5E-3", 0.0015},
      {"2e+2", 200},        {"1e-400", 0},  // Too small for a double: zero, not an error.
      {"sqrt(16)", 4},      {"sqrt (2) ^ 2", 2.0000000000000004},
      {"abs(-3.5)", 3.5},   {"abs(2-5)*sqrt(abs(-9))", 9},
      {"\t1\n+\r2", 3},     {"0.1+0.2", 0.30000000000000004},
      {"((((((1))))))", 1},
  };
  for (const ValueCase& c : cases) {
    Result<double> value = EvaluateArithmetic(c.expression);
    ASSERT_TRUE(value.ok()) << c.expression << ": " << value.status().ToString();
    EXPECT_EQ(*value, c.expected) << c.expression;
  }
}

struct ErrorCase {
  std::string expression;
  std::string message;  // A part of the error message.
};

TEST(EvaluateArithmetic, Errors) {
  const ErrorCase cases[] = {
      {"", "empty expression"},
      {"   ", "empty expression"},
      {"1/0", "division by zero at position 2"},
      {"1/(2-2)", "division by zero at position 2"},
      {"5 % 0", "remainder of division by zero at position 3"},
      {"2 3", "unexpected '3' at position 3"},
      {"2)", "unexpected ')' at position 2"},
      {"1+2 garbage", "unexpected 'g' at position 5"},
      {"2**3", "unexpected '*' at position 3"},
      {"(1+2", "missing ')' for the '(' at position 1"},
      {"(1 2)", "unexpected '2' at position 4; expected ')'"},
      {"1+", "unexpected end of expression"},
      {"*2", "unexpected '*' at position 1"},
      {".", "unexpected '.' at position 1"},
      {"1.2.3", "unexpected '.' at position 4"},
      {"2e", "exponent without digits"},
      {"2e+", "exponent without digits"},
      {"1e400", "the number at position 1 is too large"},
      {"0.000001e400", "is too large"},
      {"1e308*10", "the result of '*' at position 6 is not finite"},
      {"10^400", "the result of '^' at position 3 is not finite"},
      {"0^-1", "is not finite"},
      {"(-8)^(1/3)", "the result of '^' at position 5 is not a real number"},
      {"sqrt(-4)", "sqrt of a negative number (-4) at position 1"},
      {"log(2)", "unknown function 'log' at position 1; available: sqrt, abs"},
      {"pi", "unknown function 'pi'"},
      {"sqrt 4", "expected '(' after 'sqrt' at position 6"},
      {"1 + \x01", "unexpected byte 0x01 at position 5"},
      {"x", "unknown function 'x'"},
  };
  for (const ErrorCase& c : cases) {
    Result<double> value = EvaluateArithmetic(c.expression);
    ASSERT_FALSE(value.ok()) << c.expression << " gave " << *value;
    EXPECT_EQ(value.status().code(), StatusCode::kInvalidArgument) << c.expression;
    EXPECT_NE(value.status().message().find(c.message), std::string::npos)
        << c.expression << ": " << value.status().message();
  }
}

TEST(EvaluateArithmetic, LengthLimit) {
  // "1+1+...+1" of exactly the limit is fine; one byte more is not.
  std::string expression = "1";
  while (expression.size() + 2 <= kMaxExpressionLength) expression += "+1";
  expression += std::string(kMaxExpressionLength - expression.size(), ' ');
  ASSERT_EQ(expression.size(), kMaxExpressionLength);
  Result<double> value = EvaluateArithmetic(expression);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, static_cast<double>((kMaxExpressionLength + 1) / 2));

  Result<double> too_long = EvaluateArithmetic(expression + "1");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("1001 bytes long; the limit is 1000"),
            std::string::npos)
      << too_long.status().message();
}

std::string Nested(int depth) { return std::string(depth, '(') + "1" + std::string(depth, ')'); }

TEST(EvaluateArithmetic, NestingLimit) {
  Result<double> deepest = EvaluateArithmetic(Nested(kMaxNestingDepth));
  ASSERT_TRUE(deepest.ok()) << deepest.status().ToString();
  EXPECT_EQ(*deepest, 1);

  const std::string too_deep[] = {
      Nested(kMaxNestingDepth + 1),
      std::string(kMaxNestingDepth + 1, '-') + "1",
      [] {
        std::string chain = "1";
        for (int i = 0; i <= kMaxNestingDepth; ++i) chain += "^1";
        return chain;
      }(),
      [] {
        std::string calls;
        for (int i = 0; i <= kMaxNestingDepth; ++i) calls += "abs(";
        return calls + "1" + std::string(kMaxNestingDepth + 1, ')');
      }(),
  };
  for (const std::string& expression : too_deep) {
    Result<double> value = EvaluateArithmetic(expression);
    ASSERT_FALSE(value.ok()) << expression;
    EXPECT_NE(value.status().message().find("nests deeper than 100 levels"), std::string::npos)
        << value.status().message();
  }
  // Depth is nesting, not count: many siblings at depth 1 are fine.
  std::string siblings = "(1)";
  for (int i = 0; i < 2 * kMaxNestingDepth; ++i) siblings += "+(1)";
  Result<double> value = EvaluateArithmetic(siblings);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, 2 * kMaxNestingDepth + 1);
}

TEST(EvaluateArithmetic, PositionsCountBytesFromOne) {
  Result<double> value = EvaluateArithmetic("(1 + 2) / (3 - 3)");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "division by zero at position 9");
}

}  // namespace
}  // namespace sluice::rollout
