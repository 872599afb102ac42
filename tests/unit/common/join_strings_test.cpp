// JoinStrings: items with a separator between them.
#include "common/join_strings.h"

#include <gtest/gtest.h>

namespace sluice {
namespace join_strings_test {

TEST(JoinStringsTest, SeparatorOnlyBetweenItems) {
  struct Case {
    std::vector<std::string> items;
    std::string separator;
    std::string want;
  };
  const Case cases[] = {
      {{}, ", ", ""},         {{"a"}, ", ", "a"},     {{"a", "b", "c"}, ", ", "a, b, c"},
      {{"", "a"}, ",", ",a"}, {{"x", ""}, "|", "x|"}, {{"a", "b"}, "", "ab"},
  };
  for (const Case& c : cases) EXPECT_EQ(JoinStrings(c.items, c.separator), c.want) << c.want;
}

}  // namespace join_strings_test
}  // namespace sluice
