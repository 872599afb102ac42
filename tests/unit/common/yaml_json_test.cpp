#include "common/yaml/yaml_json.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::yaml {
namespace {

using nlohmann::json;

TEST(YamlJsonTest, TypesPlainScalarsByTheCoreSchemaAndKeepsQuotedOnesStrings) {
  Result<std::vector<json>> docs = ParseDocuments(R"(
int: 42
neg: -7
hex: 0x1F
oct: 0o17
float: 2.5
exp: 1e3
bool: true
Bool: False
null1: null
null2: ~
null3:
str: hello
quoted_int: "42"
quoted_bool: 'true'
yes_is_a_string: yes
version: 1.0.0
big: 18446744073709551615
huge: 123456789012345678901234567890
list: [1, two, 3.5]
nested: {a: {b: [x]}}
inf: .inf
)");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  const json& j = (*docs)[0];
  EXPECT_EQ(j["int"], 42);
  EXPECT_TRUE(j["int"].is_number_integer());
  EXPECT_EQ(j["neg"], -7);
  EXPECT_EQ(j["hex"], 31);
  EXPECT_EQ(j["oct"], 15);
  EXPECT_EQ(j["float"], 2.5);
  EXPECT_EQ(j["exp"], 1000.0);
  EXPECT_EQ(j["bool"], true);
  EXPECT_EQ(j["Bool"], false);
  EXPECT_TRUE(j["null1"].is_null());
  EXPECT_TRUE(j["null2"].is_null());
  EXPECT_TRUE(j["null3"].is_null());
  EXPECT_EQ(j["str"], "hello");
  EXPECT_EQ(j["quoted_int"], "42");
  EXPECT_EQ(j["quoted_bool"], "true");
  EXPECT_EQ(j["yes_is_a_string"], "yes");
  EXPECT_EQ(j["version"], "1.0.0");
  EXPECT_EQ(j["big"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(j["huge"], "123456789012345678901234567890");
  EXPECT_EQ(j["list"], json::parse(R"([1, "two", 3.5])"));
  EXPECT_EQ(j["nested"]["a"]["b"][0], "x");
  EXPECT_TRUE(std::isinf(j["inf"].get<double>()));
}

TEST(YamlJsonTest, MultipleDocumentsSkippingEmptyOnes) {
  Result<std::vector<json>> docs =
      ParseDocuments("# header\n---\na: 1\n---\n# nothing\n---\nb: 2\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0]["a"], 1);
  EXPECT_EQ((*docs)[1]["b"], 2);
}

TEST(YamlJsonTest, ErrorsNameTheLine) {
  Result<std::vector<json>> docs = ParseDocuments("a: 1\nb: [1, 2\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("YAML syntax error at line"), std::string::npos)
      << docs.status().message();
  docs = ParseDocuments("a: 1\na: 2\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("duplicate key \"a\" at line 2"), std::string::npos)
      << docs.status().message();
}

TEST(YamlJsonTest, AliasesThatExpandPastTheLimitsAreRefused) {
  // "Billion laughs": ten levels of ten aliases each stand for 10^10 nodes in 300 bytes.
  std::string laughs = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) laughs += (j ? ", " : "") + prev;
    laughs += "]\n";
  }
  Result<std::vector<json>> docs = ParseDocuments(laughs);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("expands to more than"), std::string::npos)
      << docs.status().message();
  // Few nodes, long scalars: 4 MiB repeated 10^3 times.
  std::string wide = "a0: &a0 " + std::string(size_t{4} << 20, 'x') + "\n";
  for (int i = 1; i <= 3; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    wide += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) wide += (j ? ", " : "") + prev;
    wide += "]\n";
  }
  docs = ParseDocuments(wide);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bytes of scalars"), std::string::npos)
      << docs.status().message();
  // Aliases within the limits resolve as before.
  docs = ParseDocuments("base: &b {x: 1}\nuse: *b\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0]["use"]["x"], 1);
}

TEST(YamlJsonTest, AStrayCommaWhereADocumentStartsIsAnErrorNotAHang) {
  // yaml-cpp 0.7's LoadAll looped forever on these, allocating as it went (common/yaml/load_all.h).
  for (const std::string text : {",", "\"a\",", "--- ,", ", c\t#r"}) {
    const Result<std::vector<json>> docs = ParseDocuments(text);
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("unexpected ','"), std::string::npos)
        << docs.status().message();
  }
  const Result<std::vector<json>> two = ParseDocuments("a: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->size(), 2u);
}

}  // namespace
}  // namespace sluice::yaml
