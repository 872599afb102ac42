#include "common/json/json_depth.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/http/json_body.h"

namespace sluice {
namespace {

TEST(FirstTooDeepJsonTest, CountsOnlyBracketsOutsideStrings) {
  struct Case {
    std::string text;
    size_t max_depth;
    std::optional<size_t> want;
  };
  const Case cases[] = {
      {"", 0, std::nullopt},
      {"1", 0, std::nullopt},
      {"[]", 0, 0},
      {"[]", 1, std::nullopt},
      {R"({"a":[1,{"b":2}]})", 3, std::nullopt},
      {R"({"a":[1,{"b":2}]})", 2, 8},
      {"[[],[],[]]", 2, std::nullopt},  // Siblings do not add up.
      {"[[[", 2, 2},                    // Unclosed text is measured as far as it goes.
      {R"(["[[[[", "{{{"])", 1, std::nullopt},
      {R"(["\"[[[", "\\", [[]]])", 2, 17},  // Escaped quotes stay inside; "\\" ends its string.
      {"]]]][", 1, std::nullopt},           // Stray closers never go below zero.
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FirstTooDeepJson(c.text, c.max_depth), c.want) << c.text << " max " << c.max_depth;
  }
  EXPECT_EQ(FirstTooDeepJson(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']')),
            std::nullopt);
  EXPECT_EQ(FirstTooDeepJson(std::string(kMaxJsonDepth + 1, '[')), kMaxJsonDepth);
}

TEST(JsonValueDepthTest, CountsContainersOnTheDeepestPath) {
  EXPECT_EQ(JsonValueDepth(nlohmann::json(1)), 0u);
  EXPECT_EQ(JsonValueDepth(nlohmann::json::array()), 1u);
  EXPECT_EQ(JsonValueDepth(nlohmann::json::parse(R"({"a":[1,{"b":[]}],"c":2})")), 4u);
  // Deeper than any thread's stack would survive a recursive walk.
  nlohmann::json deep = 1;
  for (int i = 0; i < 200000; ++i) {
    nlohmann::json outer = nlohmann::json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  EXPECT_EQ(JsonValueDepth(deep), 200000u);
  // Taken apart level by level: its own destructor must not recurse either.
  while (deep.is_array()) {
    nlohmann::json inner = std::move(deep[0]);
    deep = std::move(inner);
  }
}

TEST(FirstTooDeepJsonTest, ParseJsonTextRefusesDeepTextWithoutParsingIt) {
  const std::string deep = std::string(1 << 20, '[') + std::string(1 << 20, ']');
  Result<nlohmann::json> parsed = http::ParseJsonText(deep, "request body");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "request body nests deeper than 1000 levels (at byte 1000)");
  const std::string fine = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(http::ParseJsonText(fine, "request body").ok());
}

TEST(FirstTooDeepJsonTest, ParseJsonTextRefusesANulByteThatWouldEndNlohmannsInput) {
  using namespace std::string_literals;
  for (const std::string& text : {"{}\0{\"a\":1}"s, "[1,\0]"s, "\"a\0b\""s, "\0"s}) {
    Result<nlohmann::json> parsed = http::ParseJsonText(text, "request body");
    ASSERT_FALSE(parsed.ok()) << parsed->dump();
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(), "request body is not valid JSON: a NUL byte at byte " +
                                             std::to_string(text.find('\0')));
  }
  EXPECT_EQ(*http::ParseJsonText("\"a\\u0000b\"", "request body"), "a"s + '\0' + "b");
}

}  // namespace
}  // namespace sluice
