#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/field_selector.h"
#include "localcluster/apiserver/label_selector.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Labels = std::map<std::string, std::string>;

// ---- Label selector strings ----

struct MatchCase {
  std::string selector;
  Labels labels;
  bool matches;
};

TEST(ApiserverLabelSelectorTest, EveryOperatorMatches) {
  const Labels web = {{"app", "web"}, {"tier", "frontend"}, {"replicas", "3"}};
  const std::vector<MatchCase> cases = {
      {"", web, true},
      {"app=web", web, true},
      {"app=db", web, false},
      {"app==web", web, true},
      {"app==db", web, false},
      {"app!=db", web, true},
      {"app!=web", web, false},
      {"missing!=x", web, true},  // != holds when the label is absent
      {"app in (web,db)", web, true},
      {"app in (db)", web, false},
      {"missing in (x)", web, false},
      {"app notin (db,cache)", web, true},
      {"app notin (web)", web, false},
      {"missing notin (x)", web, true},
      {"app", web, true},
      {"missing", web, false},
      {"!missing", web, true},
      {"!app", web, false},
      {"replicas>2", web, true},
      {"replicas>3", web, false},
      {"replicas<4", web, true},
      {"app>1", web, false},  // not an integer: never matches
      {"app=web,tier=frontend", web, true},
      {"app=web,tier=backend", web, false},
      {"app=web,!missing,tier in (frontend)", web, true},
      {"  app = web ,  tier  in  ( frontend , backend )  ", web, true},
      {"app=", Labels{{"app", ""}}, true},
      {"app=", web, false},
      {"app in ()", Labels{{"app", ""}}, true},
      {"app in (web,)", Labels{{"app", ""}}, true},
      {"in=notin", Labels{{"in", "notin"}}, true},  // keywords are fine as keys and values
      {"app.kubernetes.io/name=sluice", Labels{{"app.kubernetes.io/name", "sluice"}}, true},
      {"app.kubernetes.io/name=sluice", Labels{{"name", "sluice"}}, false},
  };
  for (const MatchCase& c : cases) {
    SCOPED_TRACE(c.selector);
    auto s = ParseLabelSelector(c.selector);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->Matches(c.labels), c.matches);
  }
}

TEST(ApiserverLabelSelectorTest, CanonicalStringSortsByKeyAndRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"b=2,a=1", "a=1,b=2"},
      {"a==1", "a==1"},
      {"a != 1", "a!=1"},
      {"x in (c, a, b, a)", "x in (a,b,c)"},
      {"x notin (b,a)", "x notin (a,b)"},
      {" !b , a ", "a,!b"},
      {"n>5,n<9", "n>5,n<9"},
      {"k in ()", "k in ()"},
      {"app.kubernetes.io/name=x", "app.kubernetes.io/name=x"},
  };
  for (const auto& [in, want] : cases) {
    SCOPED_TRACE(in);
    auto s = ParseLabelSelector(in);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->ToString(), want);
    auto again = ParseLabelSelector(s->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *s);
  }
}

TEST(ApiserverLabelSelectorTest, ParseErrorsReadLikeKube) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
      {"a in b", "unable to parse requirement: found 'b' expected: '('"},
      {"a in (b", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"},
      {"a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"},
      {"a=(b)", "unable to parse requirement: found '(', expected: identifier"},
      {"(a)", "found '(', expected: !, identifier, or 'end of string'"},
      {"=a", "found '=', expected: !, identifier, or 'end of string'"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"a=b c", "found 'c', expected: ',' or 'end of string'"},
      {"!a=b", "found '=', expected: ',' or 'end of string'"},
      {"a=b,", "found '', expected: identifier after ','"},
      {"a=b,,c", "found ',', expected: identifier after ','"},
      {"a>b",
       "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
       "operators, the value must be an integer"},
  };
  for (const auto& [in, want] : cases) {
    SCOPED_TRACE(in);
    auto s = ParseLabelSelector(in);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), want);
  }
}

TEST(ApiserverLabelSelectorTest, KeysAndValuesAreValidatedLikeKube) {
  const std::string name_msg =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
      "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
      "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  auto bad_key = ParseLabelSelector("-a=b");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.status().message(),
            "unable to parse requirement: key: Invalid value: \"-a\": " + name_msg);

  const std::vector<std::string> bad = {
      "a/b/c=x",                       // two slashes
      "/a=x",                          // empty prefix
      "Example.com/a=x",               // prefix not lowercase
      "a/=x",                          // empty name
      std::string(64, 'k') + "=x",     // name too long
      std::string(254, 'p') + "/a=x",  // prefix too long
      "a=" + std::string(64, 'v'),     // value too long
      "a=-v",                          // value must start alphanumeric
      "a in (ok,bad!)",                // '!' ends the value: parse error
      "a in (ok,-bad)",                // value in a set
      "a=b_",                          // value must end alphanumeric
  };
  for (const std::string& in : bad) {
    SCOPED_TRACE(in);
    auto s = ParseLabelSelector(in);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(s.status().message().starts_with("unable to parse requirement: "))
        << s.status().message();
  }
  const std::vector<std::string> good = {
      std::string(63, 'k') + "=" + std::string(63, 'v'),
      "a.b-c_d=E.f-G_h",
      "example.com/a=x",
      "sub.example-1.com/A_b.c=1",
      "a=",
  };
  for (const std::string& in : good) {
    SCOPED_TRACE(in);
    EXPECT_TRUE(ParseLabelSelector(in).ok());
  }
  EXPECT_EQ(LabelValueErrors(std::string(64, 'v')), "must be no more than 63 characters");
  EXPECT_EQ(LabelKeyErrors("a/"), "name part must be non-empty");
  EXPECT_EQ(LabelKeyErrors("ok"), "");
}

TEST(ApiserverLabelSelectorTest, MatchesObjectReadsMetadataLabels) {
  auto s = ParseLabelSelector("app=web");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->MatchesObject(json::parse(R"({"metadata":{"labels":{"app":"web"}}})")));
  EXPECT_FALSE(s->MatchesObject(json::parse(R"({"metadata":{"labels":{"app":"db"}}})")));
  EXPECT_FALSE(s->MatchesObject(json::parse(R"({"metadata":{}})")));
  EXPECT_FALSE(s->MatchesObject(json::parse(R"({"metadata":{"labels":[]}})")));
  EXPECT_TRUE(LabelSelector().MatchesObject(json::parse(R"({"metadata":{}})")));
  EXPECT_FALSE(LabelSelector::Nothing().MatchesObject(json::parse(R"({"metadata":{}})")));
  auto neg = ParseLabelSelector("!app");
  ASSERT_TRUE(neg.ok());
  EXPECT_TRUE(neg->MatchesObject(json::object()));
}

// ---- metav1.LabelSelector JSON ----

TEST(ApiserverLabelSelectorJsonTest, ConvertsMatchLabelsAndExpressions) {
  struct Case {
    std::string json_text;
    std::string canonical;
  };
  const std::vector<Case> cases = {
      {R"({})", ""},
      {R"({"matchLabels":{"b":"2","a":"1"}})", "a=1,b=2"},
      {R"({"matchExpressions":[{"key":"t","operator":"In","values":["y","x"]}]})", "t in (x,y)"},
      {R"({"matchExpressions":[{"key":"t","operator":"NotIn","values":["x"]}]})", "t notin (x)"},
      {R"({"matchExpressions":[{"key":"t","operator":"Exists"}]})", "t"},
      {R"({"matchExpressions":[{"key":"t","operator":"DoesNotExist","values":null}]})", "!t"},
      {R"({"matchLabels":{"z":"1"},"matchExpressions":[{"key":"a","operator":"Exists"}]})",
       "a,z=1"},
      {R"js("app=web,tier in (a)")js", "app=web,tier in (a)"},  // scale status.selector string
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json_text);
    auto s = FromLabelSelectorJson(json::parse(c.json_text));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->ToString(), c.canonical);
  }
  auto everything = FromLabelSelectorJson(json::object());
  ASSERT_TRUE(everything.ok());
  EXPECT_TRUE(everything->Empty());
  EXPECT_TRUE(everything->Matches({}));
  auto nothing = FromLabelSelectorJson(nullptr);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->IsNothing());
  EXPECT_FALSE(nothing->Matches({}));

  auto sel = FromLabelSelectorJson(json::parse(
      R"({"matchLabels":{"app":"web"},"matchExpressions":[{"key":"env","operator":"NotIn",
          "values":["prod"]}]})"));
  ASSERT_TRUE(sel.ok());
  EXPECT_TRUE(sel->Matches({{"app", "web"}, {"env", "dev"}}));
  EXPECT_TRUE(sel->Matches({{"app", "web"}}));
  EXPECT_FALSE(sel->Matches({{"app", "web"}, {"env", "prod"}}));
}

TEST(ApiserverLabelSelectorJsonTest, RejectsMalformedSelectors) {
  struct Case {
    std::string json_text;
    std::string message;
    std::string field;
  };
  const std::vector<Case> cases = {
      {R"({"matchExpressions":[{"key":"a","operator":"Foo"}]})",
       "\"Foo\" is not a valid label selector operator", "matchExpressions[0].operator"},
      {R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})",
       "values: for 'in', 'notin' operators, values set can't be empty", "matchExpressions[0]"},
      {R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})",
       "values: values set must be empty for exists and does not exist", "matchExpressions[0]"},
      {R"({"matchExpressions":[{"operator":"Exists"}]})", "Required value: key must be a string",
       "matchExpressions[0].key"},
      {R"({"matchLabels":{"a":1}})", "must be of type string", "matchLabels.a"},
      {R"({"matchLabels":[]})", "must be of type object", "matchLabels"},
      {R"({"matchLabels":{"a":"-x"}})",
       "values[0]: Invalid value: \"-x\": a valid label must be an empty string or consist of "
       "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
       "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
       "matchLabels"},
      {R"({"selector":{}})", "unknown field \"selector\"", "selector"},
      {R"(3)", "a label selector must be an object or a string", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json_text);
    auto s = FromLabelSelectorJson(json::parse(c.json_text));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.message);
    EXPECT_EQ(s.status().field(), c.field);
  }
}

TEST(ApiserverLabelSelectorJsonTest, FromSetAndFromRequirements) {
  auto s = LabelSelector::FromSet({{"app", "web"}, {"tier", "fe"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ToString(), "app=web,tier=fe");
  EXPECT_TRUE(s->Matches({{"app", "web"}, {"tier", "fe"}, {"x", "y"}}));
  EXPECT_FALSE(s->Matches({{"app", "web"}}));
  auto bad = LabelSelector::FromRequirements({{"a", LabelOperator::kEquals, {"x", "y"}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "values: exact-match compatibility requires one single value");
}

// ---- Field selectors ----

const std::vector<std::string> kPodFields = {"spec.nodeName", "status.phase"};

json Pod(const std::string& ns, const std::string& name, const std::string& node,
         const std::string& phase) {
  json pod = {{"metadata", {{"namespace", ns}, {"name", name}}}, {"status", {{"phase", phase}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

TEST(ApiserverFieldSelectorTest, EveryOperatorMatches) {
  const json pod = Pod("default", "web-0", "node-a", "Running");
  const json unscheduled = Pod("default", "web-1", "", "Pending");
  struct Case {
    std::string selector;
    const json* object;
    bool matches;
  };
  const std::vector<Case> cases = {
      {"", &pod, true},
      {"metadata.name=web-0", &pod, true},
      {"metadata.name==web-0", &pod, true},
      {"metadata.name=web-1", &pod, false},
      {"metadata.name!=web-1", &pod, true},
      {"metadata.name!=web-0", &pod, false},
      {"metadata.namespace=default", &pod, true},
      {"metadata.namespace=kube-system", &pod, false},
      {"spec.nodeName=node-a", &pod, true},
      {"spec.nodeName=", &unscheduled, true},  // a missing field reads as ""
      {"spec.nodeName!=", &unscheduled, false},
      {"spec.nodeName!=", &pod, true},
      {"status.phase=Running,spec.nodeName=node-a", &pod, true},
      {"status.phase=Running,spec.nodeName=node-b", &pod, false},
      {"status.phase!=Succeeded,status.phase!=Failed", &pod, true},
      {" status.phase = Running ", &pod, true},
      {"metadata.name=web-0,", &pod, true},  // empty terms are skipped
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    auto s = ParseFieldSelector(c.selector, kPodFields);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->Matches(*c.object), c.matches);
  }
}

TEST(ApiserverFieldSelectorTest, ParseErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"spec.foo=x", "field label not supported: spec.foo"},
      {"spec.nodeName=a,spec.restartPolicy=Never", "field label not supported: spec.restartPolicy"},
      {"=x", "field label not supported: "},
      {"metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
      {"metadata.name=b,c", "invalid selector: 'metadata.name=b,c'; can't understand 'c'"},
      {"metadata.name=a=b", "invalid field selector: unescaped character ="},
      {"metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"},
      {"metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"},
  };
  for (const auto& [in, want] : cases) {
    SCOPED_TRACE(in);
    auto s = ParseFieldSelector(in, kPodFields);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), want);
  }
  // Fields allowed for pods are not allowed for a resource that does not list them.
  EXPECT_FALSE(ParseFieldSelector("spec.nodeName=a", {}).ok());
}

TEST(ApiserverFieldSelectorTest, EscapesCanonicalFormAndExactMatch) {
  auto s = ParseFieldSelector("metadata.name=a\\,b\\=c\\\\d", kPodFields);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->requirements().size(), 1u);
  EXPECT_EQ(s->requirements()[0].value, "a,b=c\\d");
  EXPECT_TRUE(s->Matches(json{{"metadata", {{"name", "a,b=c\\d"}}}}));
  EXPECT_EQ(s->ToString(), "metadata.name=a\\,b\\=c\\\\d");

  auto sorted = ParseFieldSelector("status.phase!=Failed, metadata.namespace==ns", kPodFields);
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->ToString(), "metadata.namespace=ns,status.phase!=Failed");
  auto again = ParseFieldSelector(sorted->ToString(), kPodFields);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *sorted);

  std::string ns;
  EXPECT_TRUE(sorted->RequiresExactMatch("metadata.namespace", &ns));
  EXPECT_EQ(ns, "ns");
  EXPECT_FALSE(sorted->RequiresExactMatch("status.phase", &ns));
  EXPECT_FALSE(sorted->RequiresExactMatch("spec.nodeName", nullptr));
}

TEST(ApiserverFieldSelectorTest, FieldValuesOfNonStrings) {
  const json obj = json::parse(R"({"spec":{"replicas":3,"paused":true,"x":null}})");
  EXPECT_EQ(FieldValueOf(obj, "spec.replicas"), "3");
  EXPECT_EQ(FieldValueOf(obj, "spec.paused"), "true");
  EXPECT_EQ(FieldValueOf(obj, "spec.x"), "");
  EXPECT_EQ(FieldValueOf(obj, "spec.replicas.deeper"), "");
  EXPECT_EQ(FieldValueOf(obj, "status.phase"), "");
  auto s = ParseFieldSelector("spec.replicas=3", {"spec.replicas"});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Matches(obj));
}

}  // namespace
}  // namespace sluice::apiserver
