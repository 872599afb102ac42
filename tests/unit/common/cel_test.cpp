// Tests of the CEL subset evaluator (common/cel): table-driven cases for literals, precedence,
// every operator, function and macro, error semantics and limits; then every rule of
// crds/*.yaml: it compiles, holds on the valid manifests in tests/data/manifests/valid, and is
// false on the invalid manifest whose "# expect-message:" header is the rule's message.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cel/program.h"

namespace sluice::cel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// --- Expressions and their values -----------------------------------------------------------

struct ValueCase {
  std::string expr;
  std::string want;  // the result as JSON text: 1 is an int, 1.0 a double
  std::string self = "{}";
};

Result<json> EvalText(const std::string& expr, const std::string& self_text) {
  Result<Program> p = Compile(expr);
  if (!p.ok()) return p.status();
  json self = json::parse(self_text);
  return p->Eval(self, nullptr);
}

void RunValueCases(const std::vector<ValueCase>& cases) {
  for (const ValueCase& c : cases) {
    Result<json> got = EvalText(c.expr, c.self);
    ASSERT_TRUE(got.ok()) << c.expr << ": " << got.status().ToString();
    json want = json::parse(c.want);
    EXPECT_EQ(got->dump(), want.dump()) << c.expr;
  }
}

TEST(CelLiteralTest, EvaluatesEveryKindOfLiteral) {
  RunValueCases({
      {"1", "1"},
      {"0x1F", "31"},
      {"1.5", "1.5"},
      {"1e3", "1000.0"},
      {"2.5e-1", "0.25"},
      {".5", "0.5"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"18446744073709551615u", "18446744073709551615"},
      {"'single'", R"("single")"},
      {R"("double")", R"("double")"},
      {R"('a\nb\t\'q\' \"d\" \\')", R"("a\nb\t'q' \"d\" \\")"},
      {R"('\x41\u00e9\U0001F600\101')", "\"A\u00e9\U0001F600A\""},
      {R"(r'a\nb')", R"("a\\nb")"},
      {R"(R"raw\d")", R"("raw\\d")"},
      {"'''it's'''", R"("it's")"},
      {"true", "true"},
      {"false", "false"},
      {"null", "null"},
      {"[]", "[]"},
      {"[1, 'a', [2.0], null,]", R"([1, "a", [2.0], null])"},
      {"{}", "{}"},
      {"{'a': 1, 'b': [true]}", R"({"a": 1, "b": [true]})"},
      {"1 // a comment\n + 1", "2"},
  });
  Result<json> u = EvalText("1u", "{}");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->is_number_unsigned());
  Result<json> i = EvalText("1", "{}");
  ASSERT_TRUE(i.ok());
  EXPECT_TRUE(i->is_number_integer() && !i->is_number_unsigned());
}

TEST(CelPrecedenceTest, FollowsCelPrecedenceAndAssociativity) {
  RunValueCases({
      {"1 + 2 * 3", "7"},
      {"(1 + 2) * 3", "9"},
      {"10 - 4 - 3", "3"},
      {"100 / 10 / 5", "2"},
      {"7 % 4 * 2", "6"},
      {"-2 * 3", "-6"},
      {"-(-3)", "3"},
      {"- -3", "3"},
      {"!!true", "true"},
      {"!true || true", "true"},
      {"true || false && false", "true"},
      {"(true || false) && false", "false"},
      {"1 + 2 == 3", "true"},
      {"1 < 2 == true", "true"},
      {"1 + 1 in [2]", "true"},
      {"2 in [1, 2] && 3 in [3]", "true"},
      {"false ? 1 : true ? 2 : 3", "2"},
      {"true || false ? 'a' : 'b'", R"("a")"},
      {"1 == 1 ? 'yes' : 'no'", R"("yes")"},
      {"[1, 2, 3][1] * 2", "4"},
      {"-[1, 2][0]", "-1"},
      {"{'a': {'b': 5}}.a.b + 1", "6"},
      {"size('ab') + [1].size()", "3"},
  });
}

TEST(CelOperatorTest, ArithmeticOnNumbersStringsAndLists) {
  RunValueCases({
      {"7 / 2", "3"},
      {"-7 / 2", "-3"},
      {"-7 % 3", "-1"},
      {"7 % -3", "1"},
      {"7.0 / 2.0", "3.5"},
      {"2.5 * 2.0", "5.0"},
      {"1.5 - 0.5", "1.0"},
      {"1 + 1.5", "2.5"},
      {"3.0 / 2", "1.5"},
      {"5u - 3u", "2"},
      {"5u * 3u", "15"},
      {"7u / 2u", "3"},
      {"7u % 2u", "1"},
      {"-1.5", "-1.5"},
      {"'ab' + 'cd'", R"("abcd")"},
      {"[1] + [2, 3]", "[1, 2, 3]"},
      {"self.l + [3]", "[1, 2, 3]", R"({"l": [1, 2]})"},
      {"9223372036854775806 + 1", "9223372036854775807"},
      {"-9223372036854775807 - 1", "-9223372036854775808"},
  });
}

TEST(CelOperatorTest, ComparisonsAreHeterogeneousAcrossNumericTypes) {
  RunValueCases({
      {"1 == 1.0", "true"},
      {"1u == 1", "true"},
      {"1u == 1.0", "true"},
      {"1 != 1.5", "true"},
      {"1 < 1.5", "true"},
      {"2 > 1.5", "true"},
      {"-1 < 0.0", "true"},
      {"-1 < 1u", "true"},
      {"2u > 1", "true"},
      {"2u >= 2.0", "true"},
      {"1.0 <= 1u", "true"},
      {"-1.5 < -1", "true"},
      {"9223372036854775807 < 9223372036854775808.0", "true"},
      {"9223372036854775807 == 9223372036854775808.0", "false"},
      {"18446744073709551615u > 9223372036854775807", "true"},
      {"18446744073709551615u < 18446744073709551616.0", "true"},
      {"-9223372036854775808 > -9223372036854777856.0", "true"},
      {"'abc' < 'abd'", "true"},
      {"'ab' < 'abc'", "true"},
      {"'b' > 'abc'", "true"},
      {"'a' <= 'a'", "true"},
      {"false < true", "true"},
      {"true >= true", "true"},
      {"0.0 / 0.0 == 0.0 / 0.0", "false"},
      {"0.0 / 0.0 != 0.0 / 0.0", "true"},
      {"0.0 / 0.0 < 1.0", "false"},
      {"1 / 0.0 > 1e308", "true"},
      {"self.i == 3.0 && self.d > 2 && self.d < 3u", "true", R"({"i": 3, "d": 2.5})"},
      {"self.big > 9223372036854775807", "true", R"({"big": 18446744073709551615})"},
  });
}

TEST(CelOperatorTest, EqualityIsDeepOnAnyValues) {
  RunValueCases({
      {"[1, 2] == [1, 2.0]", "true"},
      {"[1, 2] == [2, 1]", "false"},
      {"[1] == [1, 2]", "false"},
      {"{'a': 1} == {'a': 1.0}", "true"},
      {"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", "true"},
      {"{'a': 1} != {'b': 1}", "true"},
      {"{'a': [1, {'x': null}]} == {'a': [1, {'x': null}]}", "true"},
      {"null == null", "true"},
      {"1 == 'a'", "false"},
      {"'1' != 1", "true"},
      {"null == 0", "false"},
      {"[] == {}", "false"},
      {"self == {'a': [1, 2.5], 'b': 'x'}", "true", R"({"a": [1, 2.5], "b": "x"})"},
      {"self.a == [1, 2]", "false", R"({"a": [1, 3]})"},
  });
}

TEST(CelOperatorTest, InTestsListMembershipAndMapKeys) {
  RunValueCases({
      {"2 in [1, 2, 3]", "true"},
      {"4 in [1, 2, 3]", "false"},
      {"1.0 in [1]", "true"},
      {"[1] in [[1], [2]]", "true"},
      {"'a' in {'a': 1}", "true"},
      {"'b' in {'a': 1}", "false"},
      {"1 in {1: 'x'}", "true"},
      {"'k' in self", "true", R"({"k": null})"},
      {"'x' in self.l", "true", R"({"l": ["w", "x"]})"},
  });
}

TEST(CelFunctionTest, StringListAndMapFunctions) {
  RunValueCases({
      {"size('h\u00e9llo')", "5"},
      {"'h\u00e9llo'.size()", "5"},
      {"size([1, 2])", "2"},
      {"size({'a': 1})", "1"},
      {"self.m.size()", "2", R"({"m": {"a": 1, "b": 2}})"},
      {"'hello'.startsWith('he')", "true"},
      {"'hello'.startsWith('lo')", "false"},
      {"'hello'.endsWith('lo')", "true"},
      {"'lo'.endsWith('hello')", "false"},
      {"'hello'.contains('ell')", "true"},
      {"'hello'.contains('')", "true"},
      {"'hello'.contains('xyz')", "false"},
      {"'abc'.matches('^a.c$')", "true"},
      {"'abc'.matches('b')", "true"},
      {"'abc'.matches('^b')", "false"},
      {"matches('abc', 'b+')", "true"},
      {"'my-name'.matches(self.re)", "true", R"({"re": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"})"},
      {"'AbC-\u00c9'.lowerAscii()", "\"abc-\u00c9\""},
      {"'AbC-\u00e9'.upperAscii()", "\"ABC-\u00e9\""},
  });
}

TEST(CelFunctionTest, Conversions) {
  RunValueCases({
      {"int(5)", "5"},
      {"int(5u)", "5"},
      {"int(3.9)", "3"},
      {"int(-3.9)", "-3"},
      {"int('42')", "42"},
      {"int('-42')", "-42"},
      {"uint(3)", "3"},
      {"uint(3.7)", "3"},
      {"uint('18446744073709551615')", "18446744073709551615"},
      {"double(2)", "2.0"},
      {"double(2u)", "2.0"},
      {"double('2.5')", "2.5"},
      {"double('1e3')", "1000.0"},
      {"string(42)", R"("42")"},
      {"string(-42)", R"("-42")"},
      {"string(42u)", R"("42")"},
      {"string(1.5)", R"("1.5")"},
      {"string(2.0)", R"("2")"},
      {"string(true)", R"("true")"},
      {"string('s')", R"("s")"},
      {"dyn(1) + 1", "2"},
      {"int(self.d) + 1", "3", R"({"d": 2.0})"},
  });
  Result<json> u = EvalText("uint(3)", "{}");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->is_number_unsigned());
}

TEST(CelMacroTest, ComprehensionsOverListsAndMaps) {
  RunValueCases({
      {"[1, 2, 3].all(x, x > 0)", "true"},
      {"[1, 2, 3].all(x, x > 1)", "false"},
      {"[].all(x, false)", "true"},
      {"[1, 2, 3].exists(x, x == 2)", "true"},
      {"[1, 2, 3].exists(x, x == 4)", "false"},
      {"[].exists(x, true)", "false"},
      {"[1, 2, 3].exists_one(x, x > 2)", "true"},
      {"[1, 2, 3].exists_one(x, x > 1)", "false"},
      {"[1, 2, 3].map(x, x * 2)", "[2, 4, 6]"},
      {"[1, 2, 3].map(x, x > 1, x * 10)", "[20, 30]"},
      {"[1, 2, 3].filter(x, x % 2 == 1)", "[1, 3]"},
      {"{'a': 1, 'b': 2}.map(k, k)", R"(["a", "b"])"},
      {"{'a': 1, 'b': 2}.filter(k, k != 'a')", R"(["b"])"},
      {"{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])", "true"},
      {"self.all(k, self[k] > 0)", "true", R"({"x": 1, "y": 2})"},
      {"self.exists(k, k == 'y')", "true", R"({"x": 1, "y": 2})"},
      {"self.regions.filter(r, r.weight > 0).map(r, r.name)", R"(["b"])",
       R"({"regions": [{"name": "a", "weight": 0}, {"name": "b", "weight": 3}]})"},
  });
}

TEST(CelMacroTest, NestedScopesAndShadowing) {
  RunValueCases({
      {"[1, 2].all(x, [3, 4].all(y, x < y))", "true"},
      {"[1, 2].map(x, [10, 20].map(y, x + y))", "[[11, 21], [12, 22]]"},
      {"[[1, 2], [3]].map(x, x.map(y, y + 1))", "[[2, 3], [4]]"},
      {"[1, 2].exists(x, [5].exists(x, x == 5))", "true"},
      {"[1, 2].map(x, [5].map(x, x) + [x])", "[[5, 1], [5, 2]]"},
      {"[1, 2].all(x, x > 0) && [3].exists(x, x == 3)", "true"},
      {"[1].map(self, self + 1)", "[2]", R"({"a": 1})"},
      {"self.a.map(x, self.b.filter(y, y > x).size())", "[2, 1]",
       R"({"a": [1, 2], "b": [1, 2, 3]})"},
      {"[1, 2, 3].map(x, [1, 2, 3].filter(y, y < x).map(z, z * x))", "[[], [2], [3, 6]]"},
  });
}

TEST(CelSelectTest, FieldsIndexesAndHas) {
  const std::string self =
      R"({"a": {"b": 2, "n": null}, "items": [10, 20], "x-y": 1, "namespace": "ns",
          "a.b": 3, "p/q": 4, "u__v": 5})";
  RunValueCases({
      {"self.a.b", "2", self},
      {"self['a']['b']", "2", self},
      {"self.items[1]", "20", self},
      {"self.items[1u]", "20", self},
      {"self.items[1.0]", "20", self},
      {"has(self.a)", "true", self},
      {"has(self.zzz)", "false", self},
      {"has(self.a.b)", "true", self},
      {"has(self.a.n)", "true", self},
      {"self.a.n == null", "true", self},
      {"has(self.a.c)", "false", self},
      {"self.x__dash__y", "1", self},
      {"self.__namespace__", R"("ns")", self},
      {"self.a__dot__b + self.p__slash__q + self.u__underscores__v", "12", self},
      {"has(self.x__dash__y)", "true", self},
      {"self", R"({"k": [1]})", R"({"k": [1]})"},
      {"self", "5", "5"},
      {"self + 1", "6", "5"},
      {"self.size()", "3", R"("abc")"},
  });
}

TEST(CelLogicTest, AndOrAbsorbErrorsCommutatively) {
  RunValueCases({
      {"false && self.missing", "false"},
      {"self.missing && false", "false"},
      {"true || self.missing", "true"},
      {"self.missing || true", "true"},
      {"false && 1 / 0 == 1", "false"},
      {"1 / 0 == 1 && false", "false"},
      {"1 / 0 == 1 || true", "true"},
      {"'x' || true", "true"},
      {"[1, 2].exists(x, x == 2 || self.missing)", "true"},
      {"[0, 1].exists(x, 1 / x > 0)", "true"},
      {"[0, 1].all(x, 1 / x > 5)", "false"},
      {"[0, 1].all(x, x == 1 && 1 / x > 0)", "false"},
      {"!has(self.a) || self.a > 0", "true"},
      {"true ? 1 : 1 / 0", "1"},
  });
}

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
      {"'a'.matches(self.re)", "invalid or too complex regular expression", R"({"re": "("})"},
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

TEST(CelOldSelfTest, TransitionRules) {
  Result<Program> p = Compile("self == oldSelf");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->UsesOldSelf());
  json a = {{"x", 1}, {"l", {1, 2}}};
  json a2 = {{"l", {1, 2.0}}, {"x", 1}};
  json b = {{"x", 2}, {"l", {1, 2}}};
  Result<bool> same = p->EvalRule(a, &a2);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(*same);
  Result<bool> changed = p->EvalRule(a, &b);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  Result<bool> create = p->EvalRule(a, nullptr);
  ASSERT_FALSE(create.ok());
  EXPECT_NE(create.status().message().find("oldSelf is not available"), std::string::npos);

  Result<Program> grow = Compile("self.x >= oldSelf.x");
  ASSERT_TRUE(grow.ok());
  EXPECT_TRUE(*grow->EvalRule(b, &a));
  EXPECT_FALSE(*grow->EvalRule(a, &b));

  Result<Program> plain = Compile("self.x > 0 && [1].all(oldSelf, oldSelf > 0)");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->UsesOldSelf());  // the macro variable shadows oldSelf
  EXPECT_TRUE(*plain->EvalRule(a, nullptr));
}

TEST(CelProgramTest, CompiledProgramIsSafeToEvaluateConcurrently) {
  Result<Program> p = Compile(
      "self.items.all(i, i.name.matches('^[a-z]+$') && i.n % 2 == 0) && "
      "self.items.map(i, i.n).filter(n, n > 4).size() == 3");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  json self = {{"items", json::array()}};
  for (int i = 0; i < 6; ++i) self["items"].push_back({{"name", "abc"}, {"n", i * 2}});
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        Result<bool> r = p->EvalRule(self, nullptr);
        if (!r.ok() || !*r) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
  Program copy = *p;
  EXPECT_EQ(copy.expression(), p->expression());
}

// --- The rules of crds/*.yaml -----------------------------------------------------------------

fs::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir ? fs::path(dir) : fs::current_path();
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// YAML to JSON for the test data: quoted scalars are strings; plain ones are typed by the YAML
// 1.2 core schema (null, booleans, integers, floats), as Kubernetes reads manifests.
json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;
  if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, kInt)) {
    int64_t i = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto res = std::from_chars(begin, s.data() + s.size(), i);
    if (res.ec == std::errc()) return i;
    uint64_t u = 0;
    res = std::from_chars(begin, s.data() + s.size(), u);
    if (res.ec == std::errc()) return u;
    return std::strtod(s.c_str(), nullptr);
  }
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  return s;
}

json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToJson(n);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const YAML::Node& item : n) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    default:
      return nullptr;
  }
}

std::vector<json> LoadYaml(const fs::path& path) {
  std::vector<json> docs;
  for (const YAML::Node& doc : YAML::LoadAll(ReadText(path))) {
    if (doc.IsDefined() && !doc.IsNull()) docs.push_back(YamlToJson(doc));
  }
  return docs;
}

struct CrdSchema {
  std::string file;
  std::string kind;
  json schema;  // openAPIV3Schema of the first version
};

std::vector<CrdSchema> LoadCrds() {
  std::vector<CrdSchema> out;
  for (const char* name :
       {"dataflows.yaml", "policies.yaml", "rolloutpools.yaml", "trainerjobs.yaml"}) {
    fs::path path = SourceDir() / "crds" / name;
    EXPECT_TRUE(fs::exists(path)) << path;
    if (!fs::exists(path)) continue;
    for (const json& doc : LoadYaml(path)) {
      if (doc.value("kind", "") != "CustomResourceDefinition") continue;
      out.push_back({name, doc["spec"]["names"]["kind"].get<std::string>(),
                     doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]});
    }
  }
  return out;
}

struct RuleAt {
  std::string path;  // schema path of the node the rule is attached to, e.g. spec.workflow
  std::string rule;
  std::string message;
};

// Every x-kubernetes-validations rule in a schema, with where it is attached.
void CollectRules(const json& schema, const std::string& path, std::vector<RuleAt>& out) {
  if (!schema.is_object()) return;
  if (auto it = schema.find("x-kubernetes-validations"); it != schema.end()) {
    for (const json& v : *it) {
      out.push_back({path, v.value("rule", ""), v.value("message", "")});
    }
  }
  if (auto it = schema.find("properties"); it != schema.end()) {
    for (const auto& [name, sub] : it->items()) {
      CollectRules(sub, path.empty() ? name : path + "." + name, out);
    }
  }
  if (auto it = schema.find("items"); it != schema.end()) CollectRules(*it, path + "[]", out);
  if (auto it = schema.find("additionalProperties"); it != schema.end()) {
    CollectRules(*it, path + "{}", out);
  }
}

// Structural-schema defaulting, as the API server does before validation: an absent property
// with a default gets it, then defaulting descends into the (possibly new) value.
void ApplyDefaults(const json& schema, json& value) {
  if (!schema.is_object()) return;
  if (value.is_object()) {
    if (auto props = schema.find("properties"); props != schema.end()) {
      for (const auto& [name, sub] : props->items()) {
        if (!value.contains(name) && sub.is_object() && sub.contains("default")) {
          value[name] = sub["default"];
        }
        if (value.contains(name)) ApplyDefaults(sub, value[name]);
      }
    }
    if (auto extra = schema.find("additionalProperties");
        extra != schema.end() && extra->is_object()) {
      for (auto& [name, v] : value.items()) ApplyDefaults(*extra, v);
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (json& v : value) ApplyDefaults(*items, v);
    }
  }
}

// Calls fn(rule, self, path) for each rule at each node of `value` the rule is attached to;
// rules under an absent node are skipped, rules under an array apply to each item.
using RuleFn = std::function<void(const json& rule, const json& self, const std::string& path)>;
void WalkRules(const json& schema, const json& value, const std::string& path, const RuleFn& fn) {
  if (!schema.is_object()) return;
  if (auto it = schema.find("x-kubernetes-validations"); it != schema.end()) {
    for (const json& rule : *it) fn(rule, value, path);
  }
  if (value.is_object()) {
    if (auto props = schema.find("properties"); props != schema.end()) {
      for (const auto& [name, sub] : props->items()) {
        if (value.contains(name)) {
          WalkRules(sub, value[name], path.empty() ? name : path + "." + name, fn);
        }
      }
    }
    if (auto extra = schema.find("additionalProperties");
        extra != schema.end() && extra->is_object()) {
      for (const auto& [name, v] : value.items()) WalkRules(*extra, v, path + "." + name, fn);
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i) {
        WalkRules(*items, value[i], path + "[" + std::to_string(i) + "]", fn);
      }
    }
  }
}

std::vector<fs::path> Manifests(const std::string& which) {
  std::vector<fs::path> out;
  fs::path dir = SourceDir() / "tests" / "data" / "manifests" / which;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const CrdSchema* FindCrd(const std::vector<CrdSchema>& crds, const json& object) {
  for (const CrdSchema& c : crds) {
    if (object.value("kind", "") == c.kind) return &c;
  }
  return nullptr;
}

TEST(CelCrdRulesTest, EveryRuleInTheCrdsCompiles) {
  std::vector<CrdSchema> crds = LoadCrds();
  ASSERT_EQ(crds.size(), 4u);
  size_t total = 0;
  for (const CrdSchema& crd : crds) {
    std::vector<RuleAt> rules;
    CollectRules(crd.schema, "", rules);
    EXPECT_FALSE(rules.empty()) << crd.file;
    for (const RuleAt& r : rules) {
      ++total;
      Result<Program> p = Compile(r.rule);
      EXPECT_TRUE(p.ok()) << crd.file << " " << r.path << ": " << r.rule << ": "
                          << p.status().ToString();
      EXPECT_FALSE(r.message.empty()) << crd.file << " " << r.path << ": " << r.rule;
    }
  }
  EXPECT_GE(total, 30u);  // 36 when this test was written
}

TEST(CelCrdRulesTest, RulesHoldOnEveryValidManifest) {
  std::vector<CrdSchema> crds = LoadCrds();
  std::vector<fs::path> files = Manifests("valid");
  size_t evaluated = 0;
  for (const fs::path& file : files) {
    std::vector<json> docs = LoadYaml(file);
    ASSERT_EQ(docs.size(), 1u) << file;
    const CrdSchema* crd = FindCrd(crds, docs[0]);
    ASSERT_NE(crd, nullptr) << file;
    json object = docs[0];
    ApplyDefaults(crd->schema, object);
    WalkRules(crd->schema, object, "",
              [&](const json& rule, const json& self, const std::string& path) {
                std::string text = rule.value("rule", "");
                Result<Program> p = Compile(text);
                ASSERT_TRUE(p.ok()) << text;
                // On create a transition rule is skipped; an unchanged update must also pass it.
                const json* old_self = p->UsesOldSelf() ? &self : nullptr;
                Result<bool> r = p->EvalRule(self, old_self);
                ++evaluated;
                ASSERT_TRUE(r.ok()) << file.filename() << " " << path << ": " << text << ": "
                                    << r.status().ToString();
                EXPECT_TRUE(*r) << file.filename() << " " << path << ": " << text;
              });
  }
  if (!files.empty()) {
    EXPECT_GT(evaluated, files.size());
  }
}

TEST(CelCrdRulesTest, RulesFailOnTheInvalidManifestsThatExpectTheirMessage) {
  std::vector<CrdSchema> crds = LoadCrds();
  size_t checked = 0;
  for (const fs::path& file : Manifests("invalid")) {
    std::string text = ReadText(file);
    std::smatch m;
    static const std::regex kExpect("# expect-message: ([^\\n]*)");
    if (!std::regex_search(text, m, kExpect)) continue;
    std::string message = m[1];
    std::vector<json> docs = LoadYaml(file);
    ASSERT_EQ(docs.size(), 1u) << file;
    const CrdSchema* crd = FindCrd(crds, docs[0]);
    if (crd == nullptr) continue;
    json object = docs[0];
    ApplyDefaults(crd->schema, object);
    bool is_rule_message = false;
    bool failed = false;
    WalkRules(crd->schema, object, "", [&](const json& rule, const json& self, const std::string&) {
      if (rule.value("message", "") != message) return;
      is_rule_message = true;
      Result<Program> p = Compile(rule.value("rule", ""));
      ASSERT_TRUE(p.ok());
      if (p->UsesOldSelf()) return;
      Result<bool> r = p->EvalRule(self, nullptr);
      EXPECT_TRUE(r.ok()) << file.filename() << ": " << r.status().ToString();
      if (r.ok() && !*r) failed = true;
    });
    if (!is_rule_message) continue;
    ++checked;
    EXPECT_TRUE(failed) << file.filename() << ": rule with message '" << message
                        << "' did not fail";
  }
  if (!Manifests("invalid").empty()) {
    EXPECT_GT(checked, 20u);
  }
}

}  // namespace
}  // namespace sluice::cel
