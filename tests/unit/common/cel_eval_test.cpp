// Tests of the CEL subset evaluator (common/cel): table-driven cases for literals, precedence,
// every operator, function and macro, field selection, && / ||, transition rules (oldSelf), and a
// compiled program evaluated by several threads at once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/cel/program.h"
#include "tests/unit/common/cel_test_support.h"

namespace sluice::cel {
namespace {

using nlohmann::json;
using testing_support::EvalText;

// --- Expressions and their values -----------------------------------------------------------

struct ValueCase {
  std::string expr;
  std::string want;  // the result as JSON text: 1 is an int, 1.0 a double
  std::string self = "{}";
};

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
      // RE2's syntax, which Kubernetes' CEL uses: inline flags and Perl classes.
      {"'ABC'.matches('(?i)^abc$')", "true"},
      {"'x-12'.matches('^\\\\w-\\\\d+$')", "true"},
      {"'\u00e9t\u00e9'.matches('^.{3}$')", "true"},
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

}  // namespace
}  // namespace sluice::cel
