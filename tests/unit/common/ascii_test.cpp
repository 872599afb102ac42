#include "common/ascii.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace sluice {
namespace ascii_test {

TEST(AsciiTest, SpaceIsWhatTheCLocaleCallsSpace) {
  for (int c = 0; c < 128; ++c) {
    EXPECT_EQ(IsAsciiSpace(static_cast<char>(c)), std::isspace(c) != 0) << c;
  }
  EXPECT_FALSE(IsAsciiSpace('\xA0'));  // A UTF-8 continuation byte, not a space.
}

TEST(AsciiTest, StripRemovesLeadingAndTrailingSpaceOnly) {
  const struct {
    std::string in;
    std::string want;
  } cases[] = {
      {"", ""},   {" \t\r\n\v\f", ""},       {"  a b  ", "a b"}, {"\ntoken\n", "token"},
      {"x", "x"}, {"\xC3\xA9 ", "\xC3\xA9"},  // "é": its bytes stay whole.
  };
  for (const auto& tc : cases) EXPECT_EQ(StripAsciiSpace(tc.in), tc.want) << tc.in;
}

TEST(AsciiTest, LowerTouchesOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("Pod/ABC-09_z"), "pod/abc-09_z");
  EXPECT_EQ(AsciiLower("\xC3\x89"), "\xC3\x89");  // "É" is not ASCII: unchanged.
  EXPECT_EQ(AsciiLower('Q'), 'q');
  EXPECT_EQ(AsciiLower('['), '[');
}

}  // namespace ascii_test
}  // namespace sluice
