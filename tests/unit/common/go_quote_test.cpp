// Go's %q (strconv.Quote) of a string and of a []string, as kube's messages quote names.
#include "common/go_quote.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

TEST(GoQuoteTest, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(GoQuote("a\"b\\c\n\x01"), R"("a\"b\\c\n\x01")");
  EXPECT_EQ(GoQuote(""), R"("")");
  EXPECT_EQ(GoQuote("\a\b\f\n\r\t\v"), R"("\a\b\f\n\r\t\v")");
  EXPECT_EQ(GoQuote("\x1f\x7f"), R"("\x1f\x7f")");
  EXPECT_EQ(GoQuote(std::string("a\0b", 3)), R"("a\x00b")");
}

TEST(GoQuoteTest, PassesPrintableAndUtf8BytesAsTheyAre) {
  EXPECT_EQ(GoQuote("web-0 ns/name:'x'"), R"("web-0 ns/name:'x'")");
  EXPECT_EQ(GoQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}

TEST(GoQuoteTest, QuotesAListAsGoPrintsAStringSlice) {
  EXPECT_EQ(GoQuoteList({}), "[]");
  EXPECT_EQ(GoQuoteList({"a"}), R"(["a"])");
  EXPECT_EQ(GoQuoteList({"system:authenticated", "x\"y"}), R"(["system:authenticated" "x\"y"])");
}

}  // namespace
}  // namespace sluice
