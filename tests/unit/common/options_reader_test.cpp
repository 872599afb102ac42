#include "common/json/options_reader.h"

#include <gtest/gtest.h>

namespace sluice {
namespace options_reader_test {

using nlohmann::json;

// Reads {maxTokens: int, ratio: number, strict: bool, mode: string} the way a component does.
Status ReadAll(const json& options) {
  SLUICE_ASSIGN_OR_RETURN(JsonOptions reader, JsonOptions::Create(options));
  int64_t max_tokens = 0;
  double ratio = 0;
  bool strict = false;
  std::string mode;
  SLUICE_RETURN_IF_ERROR(reader.Int("maxTokens", max_tokens));
  SLUICE_RETURN_IF_ERROR(reader.Double("ratio", ratio));
  SLUICE_RETURN_IF_ERROR(reader.Bool("strict", strict));
  SLUICE_RETURN_IF_ERROR(reader.String("mode", mode));
  return reader.RejectUnknown();
}

TEST(OptionsReaderTest, ErrorsNameTheFieldAndWhatCame) {
  struct Case {
    json options;
    std::string want;  // Status::ToString() after PrefixField("reward.options"); "" for OK.
  };
  const Case cases[] = {
      {json(), ""},
      {json::object(), ""},
      {{{"maxTokens", 5}, {"ratio", 1}, {"strict", true}, {"mode", "x"}}, ""},
      {{{"maxTokens", 2.0}},
       "InvalidArgument: reward.options.maxTokens: must be an integer, got number"},
      {{{"maxTokens", "5"}},
       "InvalidArgument: reward.options.maxTokens: must be an integer, got string"},
      {{{"maxTokens", 18446744073709551615ULL}},
       "InvalidArgument: reward.options.maxTokens: out of range"},
      {{{"ratio", "0.5"}}, "InvalidArgument: reward.options.ratio: must be a number, got string"},
      {{{"strict", 1}}, "InvalidArgument: reward.options.strict: must be a boolean, got number"},
      {{{"mode", false}}, "InvalidArgument: reward.options.mode: must be a string, got boolean"},
      {{{"maxTokns", 5}},
       "InvalidArgument: reward.options.maxTokns: unknown option; known: maxTokens, mode, ratio, "
       "strict"},
      {json::array(), "InvalidArgument: reward.options: must be an object, got array"},
      {json("x"), "InvalidArgument: reward.options: must be an object, got string"},
  };
  for (const Case& c : cases) {
    const Status s = PrefixField(ReadAll(c.options), "reward.options");
    EXPECT_EQ(s.ok() ? "" : s.ToString(), c.want) << c.options.dump();
  }
}

TEST(OptionsReaderTest, AbsentKeysKeepTheDefaultsAndPresentOnesReplaceThem) {
  Result<JsonOptions> reader = JsonOptions::Create(json{{"ratio", 3}});
  ASSERT_TRUE(reader.ok());
  double ratio = 0.5;
  int64_t n = 7;
  ASSERT_TRUE(reader->Double("ratio", ratio).ok());
  ASSERT_TRUE(reader->Int("n", n).ok());
  EXPECT_EQ(ratio, 3.0);  // an integer is a number
  EXPECT_EQ(n, 7);
  EXPECT_TRUE(reader->RejectUnknown().ok());
}

TEST(OptionsReaderTest, AComponentWithoutOptionsRejectsAnyKey) {
  Result<JsonOptions> reader = JsonOptions::Create(json{{"x", 1}});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->RejectUnknown().ToString(),
            "InvalidArgument: x: unknown option; this takes none");
}

}  // namespace options_reader_test
}  // namespace sluice
