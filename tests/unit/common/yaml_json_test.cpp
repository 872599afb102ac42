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

}  // namespace
}  // namespace sluice::yaml
