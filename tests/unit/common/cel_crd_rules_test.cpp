// Tests of every rule of crds/*.yaml against the CEL subset evaluator (common/cel): it compiles,
// holds on the valid manifests in tests/data/manifests/valid, and is false on the invalid
// manifest whose "# expect-message:" header is the rule's message.
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
#include <vector>

#include "common/cel/program.h"
#include "tests/support/read_file.h"

namespace sluice::cel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path SourceDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir ? fs::path(dir) : fs::current_path();
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
  for (const YAML::Node& doc : YAML::LoadAll(test_support::ReadFileOrEmpty(path))) {
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
    std::string text = test_support::ReadFileOrEmpty(file);
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
