#include "common/config/value_parsers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

namespace sluice::config {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseIntTest, AcceptsDecimalIntegers) {
  EXPECT_EQ(*ParseInt("0"), 0);
  EXPECT_EQ(*ParseInt("42"), 42);
  EXPECT_EQ(*ParseInt("-7"), -7);
  EXPECT_EQ(*ParseInt("+7"), 7);
  EXPECT_EQ(*ParseInt("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*ParseInt("-9223372036854775808"), std::numeric_limits<int64_t>::min());
}

TEST(ParseIntTest, RejectsEverythingElse) {
  for (const char* bad :
       {"", "abc", "1.5", " 1", "1 ", "0x10", "1e3", "+", "-", "+-1", "++1", "1_000"}) {
    const auto r = ParseInt(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(ParseInt("abc").status().message(), "\"abc\" is not an integer");
  EXPECT_EQ(ParseInt("9223372036854775808").status().message(),
            "\"9223372036854775808\" is out of range for a 64-bit integer");
}

TEST(ParseDoubleTest, AcceptsNumbers) {
  EXPECT_DOUBLE_EQ(*ParseDouble("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseDouble("-2"), -2.0);
  EXPECT_DOUBLE_EQ(*ParseDouble("+2.25"), 2.25);
  EXPECT_DOUBLE_EQ(*ParseDouble("1e-3"), 0.001);
}

TEST(ParseDoubleTest, RejectsNonNumbersAndNonFinite) {
  EXPECT_EQ(ParseDouble("x").status().message(), "\"x\" is not a number");
  EXPECT_FALSE(ParseDouble("").ok());
  EXPECT_FALSE(ParseDouble("1.5.2").ok());
  EXPECT_FALSE(ParseDouble("1,5").ok());
  EXPECT_EQ(ParseDouble("inf").status().message(), "\"inf\" is not a finite number");
  EXPECT_FALSE(ParseDouble("nan").ok());
  EXPECT_FALSE(ParseDouble("1e999").ok());
}

TEST(ParseBoolTest, AcceptsCommonSpellings) {
  for (const char* t : {"true", "TRUE", "True", "yes", "on", "1"}) EXPECT_TRUE(*ParseBool(t)) << t;
  for (const char* f : {"false", "FALSE", "no", "Off", "0"}) EXPECT_FALSE(*ParseBool(f)) << f;
  EXPECT_EQ(ParseBool("maybe").status().message(),
            "\"maybe\" is not a boolean (use true or false)");
  EXPECT_FALSE(ParseBool("").ok());
  EXPECT_FALSE(ParseBool("2").ok());
}

TEST(ParseDurationTest, AcceptsUnitsAndCombinations) {
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("30s"), seconds(30));
  EXPECT_EQ(*ParseDuration("5m"), minutes(5));
  EXPECT_EQ(*ParseDuration("1h"), hours(1));
  EXPECT_EQ(*ParseDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDuration("2h45m30s250ms"),
            hours(2) + minutes(45) + seconds(30) + milliseconds(250));
  EXPECT_EQ(*ParseDuration("10us"), microseconds(10));
  EXPECT_EQ(*ParseDuration("10\xC2\xB5s"), microseconds(10));
  EXPECT_EQ(*ParseDuration("7ns"), nanoseconds(7));
  EXPECT_EQ(*ParseDuration("1.5h"), minutes(90));
  EXPECT_EQ(*ParseDuration("0.25s"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("0"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("0s"), nanoseconds(0));
}

TEST(ParseDurationTest, PlainNumbersAreSeconds) {
  EXPECT_EQ(*ParseDuration("30"), seconds(30));
  EXPECT_EQ(*ParseDuration("0.5"), milliseconds(500));
}

TEST(ParseDurationTest, Rejects) {
  EXPECT_EQ(ParseDuration("abc").status().message(),
            "\"abc\" is not a duration (use a number with a unit, e.g. 500ms, 30s, 5m, 1h30m; a "
            "plain number is seconds)");
  EXPECT_EQ(ParseDuration("5d").status().message(),
            "\"5d\" is not a duration: unknown unit \"d\" (use ns, us, ms, s, m, h)");
  EXPECT_EQ(ParseDuration("1h30").status().message(),
            "\"1h30\" is not a duration: missing unit after the last number (use ns, us, ms, s, "
            "m, h)");
  EXPECT_EQ(ParseDuration("-5s").status().message(),
            "\"-5s\" is not a duration: negative durations are not allowed");
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("s").ok());
  EXPECT_FALSE(ParseDuration("1 h").ok());
  EXPECT_FALSE(ParseDuration("1H").ok());
  EXPECT_FALSE(ParseDuration("ms5").ok());
  EXPECT_TRUE(ParseDuration("2562047h").ok());  // ~292 years: what an int64 of ns holds.
  EXPECT_EQ(ParseDuration("2562048h").status().message(),
            "\"2562048h\" is not a duration: too large (the maximum is about 292 years)");
  EXPECT_FALSE(ParseDuration("99999999999999999999999s").ok());
}

TEST(ParseByteSizeTest, AcceptsKubernetesQuantities) {
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("512k"), 512'000u);
  EXPECT_EQ(*ParseByteSize("100M"), 100'000'000u);
  EXPECT_EQ(*ParseByteSize("2G"), 2'000'000'000u);
  EXPECT_EQ(*ParseByteSize("1Ki"), 1024u);
  EXPECT_EQ(*ParseByteSize("64Mi"), 64u << 20);
  EXPECT_EQ(*ParseByteSize("1Gi"), 1u << 30);
  EXPECT_EQ(*ParseByteSize("1.5Gi"), 3u << 29);
  EXPECT_EQ(*ParseByteSize("2Ti"), uint64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("1Pi"), uint64_t{1} << 50);
  EXPECT_EQ(*ParseByteSize("15Ei"), uint64_t{15} << 60);
  EXPECT_EQ(*ParseByteSize("0.5k"), 500u);
  EXPECT_EQ(*ParseByteSize("18446744073709551615"), std::numeric_limits<uint64_t>::max());
}

TEST(ParseByteSizeTest, Rejects) {
  EXPECT_EQ(ParseByteSize("64MB").status().message(),
            "\"64MB\" is not a byte size: unknown unit \"MB\" (use k, M, G, T, P, E for powers of "
            "1000 or Ki, Mi, Gi, Ti, Pi, Ei for powers of 1024)");
  EXPECT_FALSE(ParseByteSize("1K").ok());  // Kubernetes: the decimal kilo is lower case.
  EXPECT_FALSE(ParseByteSize("1GiB").ok());
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("Mi").ok());
  EXPECT_FALSE(ParseByteSize("-1").ok());
  EXPECT_FALSE(ParseByteSize("1 Mi").ok());
  EXPECT_EQ(ParseByteSize("1.5").status().message(), "\"1.5\" is not a whole number of bytes");
  EXPECT_FALSE(ParseByteSize("0.1Ki").ok());
  EXPECT_EQ(ParseByteSize("16Ei").status().message(), "\"16Ei\" is too large for a byte size");
  EXPECT_FALSE(ParseByteSize("18446744073709551616").ok());
}

TEST(ParseStringListTest, SplitsTrimsAndDropsEmptyItems) {
  EXPECT_EQ(ParseStringList("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ParseStringList(" a , b,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ParseStringList("one"), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(ParseStringList("").empty());
  EXPECT_TRUE(ParseStringList(",").empty());
}

TEST(FormatTest, DurationsReadBack) {
  EXPECT_EQ(FormatDuration(nanoseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1s500ms");
  EXPECT_EQ(FormatDuration(nanoseconds(1001)), "1us1ns");
  EXPECT_EQ(FormatDuration(-seconds(2)), "-2s");
  for (nanoseconds d : {nanoseconds(0), nanoseconds(1), nanoseconds(123456789012345),
                        nanoseconds(hours(49) + milliseconds(7)), nanoseconds(microseconds(3))}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(d)), d) << FormatDuration(d);
  }
}

TEST(FormatTest, ByteSizesReadBack) {
  EXPECT_EQ(FormatByteSize(0), "0");
  EXPECT_EQ(FormatByteSize(64u << 20), "64Mi");
  EXPECT_EQ(FormatByteSize(1000), "1k");
  EXPECT_EQ(FormatByteSize(3000000), "3M");
  EXPECT_EQ(FormatByteSize(3072), "3Ki");
  EXPECT_EQ(FormatByteSize(1536), "1536");
  EXPECT_EQ(FormatByteSize(1001), "1001");
  for (uint64_t b : {uint64_t{0}, uint64_t{1}, uint64_t{1024}, uint64_t{999999}, uint64_t{5} << 60,
                     std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(b)), b) << FormatByteSize(b);
  }
}

TEST(FormatTest, DoublesAndQuotes) {
  EXPECT_EQ(FormatDouble(0.5), "0.5");
  EXPECT_EQ(FormatDouble(3), "3");
  EXPECT_EQ(*ParseDouble(FormatDouble(0.1)), 0.1);
  EXPECT_EQ(Quote("abc"), "\"abc\"");
  EXPECT_EQ(Quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\x01\"");
}

}  // namespace
}  // namespace sluice::config
