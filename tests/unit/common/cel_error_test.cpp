// Tests of the CEL subset's errors (common/cel): evaluation errors and their messages, rule
// results that are not a bool, syntax errors and constructs outside the subset, and the limits on
// nesting, evaluation steps and value depth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/cel/program.h"
#include "common/status.h"
#include "tests/unit/common/cel_test_support.h"

namespace sluice::cel {
namespace {

using nlohmann::json;
using testing_support::EvalText;

// --- Errors -----------------------------------------------------------------------------------

struct ErrorCase {
  std::string expr;
  std::string want;  // substring of the error message
  std::string self = "{}";
};

TEST(CelErrorTest, EvaluationErrors) {
  const std::vector<ErrorCase> cases = {
      {"self.missing", "no such key: missing"},
      {"self.a.c", "no such key: c", R"({"a": {"b": 1}})"},
      {"self.a.b", "does not support field selection", R"({"a": 1})"},
      {"has(self.a.b)", "has() requires a map", R"({"a": [1]})"},
      {"{'a': 1}['b']", "no such key: b"},
      {"[1][5]", "index out of range: 5"},
      {"[1][-1]", "index out of range: -1"},
      {"[1][0.5]", "invalid list index"},
      {"[1]['a']", "no such overload"},
      {"1 / 0", "division by zero"},
      {"1u / 0u", "division by zero"},
      {"1 % 0", "modulus by zero"},
      {"9223372036854775807 + 1", "integer overflow"},
      {"-9223372036854775808 - 1", "integer overflow"},
      {"9223372036854775807 * 2", "integer overflow"},
      {"-(-9223372036854775808)", "integer overflow"},
      {"-9223372036854775808 / -1", "integer overflow"},
      {"-9223372036854775808 % -1", "integer overflow"},
      {"0u - 1u", "unsigned integer overflow"},
      {"18446744073709551615u + 1u", "unsigned integer overflow"},
      {"-1u", "no such overload"},
      {"1.5 % 1.0", "no such overload"},
      {"1 + 1u", "no such overload: int + uint"},
      {"'a' + 1", "no such overload: string + int"},
      {"1 < 'a'", "no such overload: int < string"},
      {"[1] < [2]", "no such overload"},
      {"null < null", "no such overload"},
      {"{'a': 1} + {'b': 2}", "no such overload"},
      {"!1", "no such overload: ! on int"},
      {"1 in 'abc'", "no such overload"},
      {"self.missing && true", "no such key: missing"},
      {"true && self.missing", "no such key: missing"},
      {"false || self.missing", "no such key: missing"},
      {"true && 1", "no such overload: && on int"},
      {"1 || false", "no such overload: || on int"},
      {"1 ? 2 : 3", "no such overload"},
      {"int('x')", "int(): cannot convert 'x'"},
      {"int('')", "cannot convert"},
      {"int(1e19)", "int() overflow"},
      {"int(0.0 / 0.0)", "int() overflow"},
      {"int(18446744073709551615u)", "int() overflow"},
      {"uint(-1)", "uint() overflow"},
      {"uint(-1.5)", "uint() overflow"},
      {"double('x')", "cannot convert"},
      {"string([1])", "no such overload"},
      {"int(true)", "no such overload"},
      {"size(1)", "no such overload: size() on int"},
      {"1.size()", "no such overload"},
      {"'a'.startsWith(1)", "no such overload"},
      {"1.contains('a')", "no such overload"},
      {"'a'.matches(self.re)", "invalid regular expression at offset 1", R"({"re": "("})"},
      // Catastrophic backtracking (exponential under std::regex, which ran here before): the
      // step limit answers an error at once instead of holding the thread.
      {"self.s.matches(self.re)", "backtracking steps",
       R"({"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "re": "^(a+)+$"})"},
      {"self.s.matches('^(a|aa)*$')", "backtracking steps",
       R"({"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"})"},
      {"1.lowerAscii()", "no such overload"},
      {"[1].all(x, x)", "no such overload: all() on int"},
      {"[1].exists(x, 'a')", "no such overload"},
      {"[0, 1].all(x, 1 / x > 0)", "division by zero"},
      {"[1, 1].exists_one(x, 1 / 0 == 1)", "division by zero"},
      {"[1].filter(x, 1)", "no such overload"},
      {"1.all(x, true)", "macro requires a list or map, got int"},
      {"{'a': 1, 'a': 2}", "duplicate map key: a"},
      {"{[1]: 2}", "unsupported map key type list"},
      {"oldSelf", "oldSelf is not available"},
  };
  for (const ErrorCase& c : cases) {
    Result<json> got = EvalText(c.expr, c.self);
    ASSERT_FALSE(got.ok()) << c.expr << " unexpectedly gave " << got->dump();
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.expr;
    EXPECT_NE(got.status().message().find(c.want), std::string::npos)
        << c.expr << ": " << got.status().message();
  }
}

TEST(CelErrorTest, MapWithNonStringKeysCannotBecomeJson) {
  Result<json> got = EvalText("{1: 2}", "{}");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("int key"), std::string::npos);
  Result<json> in = EvalText("{1: 2}[1]", "{}");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(*in, 2);
}

TEST(CelErrorTest, RuleResultMustBeABool) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1", "got int"},       {"'x'", "got string"},     {"self", "got map"},
      {"[true]", "got list"}, {"null", "got null_type"}, {"1.0", "got double"},
  };
  for (const auto& [expr, want] : cases) {
    Result<Program> p = Compile(expr);
    ASSERT_TRUE(p.ok()) << expr;
    Result<bool> r = p->EvalRule(json::object(), nullptr);
    ASSERT_FALSE(r.ok()) << expr;
    EXPECT_NE(r.status().message().find("validation rule must evaluate to a bool, " + want),
              std::string::npos)
        << r.status().message();
  }
  Result<Program> p = Compile("self.a > 1");
  ASSERT_TRUE(p.ok());
  Result<bool> yes = p->EvalRule(json{{"a", 2}}, nullptr);
  ASSERT_TRUE(yes.ok());
  EXPECT_TRUE(*yes);
  Result<bool> no = p->EvalRule(json{{"a", 1}}, nullptr);
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(*no);
}

TEST(CelCompileTest, SyntaxErrorsNameTheColumnAndWhatWasExpected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 +", "syntax error at column 4: expected an expression but found end of input"},
      {"(1 + 2", "syntax error at column 7: expected ')' but found end of input"},
      {"self.a ==", "syntax error at column 10: expected an expression"},
      {"self.",
       "syntax error at column 6: expected a field name after '.' but found end of "
       "input"},
      {"[1, 2", "syntax error at column 6: expected ',' or ']' but found end of input"},
      {"{'a' 1}", "syntax error at column 6: expected ':' but found number"},
      {"f(1 2)", "syntax error at column 5: expected ',' or ')' but found number"},
      {"true ? 1", "syntax error at column 9: expected ':' but found end of input"},
      {"1 2", "syntax error at column 3: expected an operator or end of input but found number"},
      {"self.a = 1", "syntax error at column 8: unexpected '=' (use '==' to compare)"},
      {"a & b", "syntax error at column 3: unexpected '&' (use '&&')"},
      {"'abc", "syntax error at column 1: unterminated string literal"},
      {"'a\\qb'", "syntax error at column 3: invalid escape sequence '\\q'"},
      {"self # x", "syntax error at column 6: unexpected character '#'"},
      {"9223372036854775808", "syntax error at column 1: integer literal out of range"},
      {"99999999999999999999", "syntax error at column 1: integer literal out of range"},
      {"1e", "syntax error at column 2: expected digits in the exponent"},
      {"12abc", "syntax error at column 3: unexpected character after number"},
      {"self.namespace", "syntax error at column 6: reserved word 'namespace' cannot be used"},
      {"in", "syntax error at column 1: expected an expression but found 'in'"},
      {"has(self)", "invalid argument to has() macro"},
      {"has(self.a, self.b)", "invalid argument to has() macro"},
      {"self.map(1, 2)", "invalid argument to map() macro: expected a variable name"},
      {"size()", "function 'size' expects 1 argument(s) but got 0"},
      {"'a'.startsWith()", "function 'startsWith' expects 1 argument(s) but got 0"},
      {"'a'.matches('(')", "invalid regular expression at column 13"},
      {"", "syntax error at column 1: expected an expression but found end of input"},
  };
  for (const auto& [expr, want] : cases) {
    Result<Program> p = Compile(expr);
    ASSERT_FALSE(p.ok()) << expr;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << expr;
    EXPECT_NE(p.status().message().find(want), std::string::npos)
        << expr << ": " << p.status().message();
  }
}

TEST(CelCompileTest, ConstructsOutsideTheSubsetAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"timestamp('2020-01-01T00:00:00Z')", "unsupported function 'timestamp' at column 1"},
      {"duration('1s') > duration('0s')", "unsupported function 'duration'"},
      {"type(self) == int", "unsupported function 'type'"},
      {"self.name.split(',')", "unsupported function 'split'"},
      {"self.l.sort()", "unsupported function 'sort'"},
      {"self.l.isSorted()", "unsupported function 'isSorted'"},
      {"math.greatest(1, 2)", "unsupported function 'math.greatest'"},
      {"quantity('1Gi').isGreaterThan(quantity('1Mi'))", "unsupported function 'quantity'"},
      {"'a'.size(1)", "function 'size' expects 0 argument(s)"},
      {"startsWith('a', 'b')", "unsupported function 'startsWith' in global style"},
      {"1.int()", "unsupported function 'int' in receiver style"},
      {"self.all(k, v, v > 0)", "unsupported all() with 3 arguments"},
      {"self.a.?b", "unsupported optional field selection"},
      {"self.l[?0]", "unsupported optional index"},
      {"{?'a': 1}", "unsupported optional map entry"},
      {"b'abc'", "unsupported bytes literal"},
      {"Foo{a: 1}", "unsupported message construction 'Foo{...}'"},
      {".self", "unsupported leading '.'"},
      {"foo", "undeclared reference to 'foo' at column 1"},
      {"self.l.all(x, y > 0)", "undeclared reference to 'y' at column 15"},
      {"[1].all(x, x > 0) && x > 0", "undeclared reference to 'x' at column 22"},
  };
  for (const auto& [expr, want] : cases) {
    Result<Program> p = Compile(expr);
    ASSERT_FALSE(p.ok()) << expr;
    EXPECT_NE(p.status().message().find(want), std::string::npos)
        << expr << ": " << p.status().message();
  }
}

TEST(CelLimitTest, NestingDepthIsBounded) {
  std::string parens = std::string(200, '(') + "1" + std::string(200, ')');
  std::string chain = "1";
  for (int i = 0; i < 200; ++i) chain += " + 1";
  std::string nots = std::string(300, '!') + "true";
  std::string lists = std::string(5000, '[') + std::string(5000, ']');
  for (const std::string& expr : {parens, chain, nots, lists}) {
    Result<Program> p = Compile(expr);
    ASSERT_FALSE(p.ok()) << expr.substr(0, 20);
    EXPECT_NE(p.status().message().find("expression nesting exceeds the limit of 100"),
              std::string::npos)
        << p.status().message();
  }
  std::string ok = "1";
  for (int i = 0; i < 90; ++i) ok += " + 1";
  Result<json> sum = EvalText(ok, "{}");
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*sum, 91);
}

TEST(CelLimitTest, EvaluationStepsAreBoundedAndTheLimitIsNotAbsorbed) {
  json self = json::array();
  for (int i = 0; i < 2000; ++i) self.push_back(i);
  for (const char* expr :
       {"self.all(a, self.all(b, a + b >= 0))", "self.all(a, self.all(b, a + b >= 0)) || true",
        "true && self.exists(a, self.exists(b, a + b < 0))",
        "self.map(a, self.map(b, b)).size() > 0"}) {
    Result<Program> p = Compile(expr);
    ASSERT_TRUE(p.ok()) << expr;
    Result<bool> r = p->EvalRule(self, nullptr);
    ASSERT_FALSE(r.ok()) << expr;
    EXPECT_EQ(r.status().code(), StatusCode::kTooLarge) << expr;
    EXPECT_NE(r.status().message().find("evaluation cost limit exceeded"), std::string::npos);
  }
  Result<Program> p = Compile("self.all(a, a >= 0)");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->EvalRule(self, nullptr).ok());
  Result<bool> small = p->EvalRule(self, nullptr, /*max_steps=*/100);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kTooLarge);
}

TEST(CelLimitTest, DeepValuesAreBounded) {
  json deep = json::array();
  json* at = &deep;
  for (int i = 0; i < 5000; ++i) {
    at->push_back(json::array());
    at = &(*at)[0];
  }
  Result<Program> p = Compile("self == oldSelf");
  ASSERT_TRUE(p.ok());
  Result<bool> r = p->EvalRule(deep, &deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("value nesting exceeds"), std::string::npos);
}

}  // namespace
}  // namespace sluice::cel
