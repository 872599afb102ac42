// RFC 3339 timestamps as Kubernetes writes them (metav1.Time, metav1.MicroTime).
#include "common/time_format.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(TimeFormatTest, UnreadableTimesReadAsTheEpoch) {
  EXPECT_EQ(ParseTimeOrEpoch(""), Clock::WallTime{});
  EXPECT_EQ(ParseTimeOrEpoch("yesterday"), Clock::WallTime{});
  EXPECT_EQ(UnixSecondsOrZero("not a time"), 0);
  EXPECT_EQ(UnixSecondsOrZero("2026-01-01T00:00:00Z"), 1767225600);
  EXPECT_EQ(UnixSecondsOrZero("2026-01-01T01:00:00+01:00"), 1767225600);
}

TEST(TimeFormatTest, FormatsAndParsesRfc3339) {
  Result<Clock::WallTime> t = ParseTime("2026-11-22T10:00:00.5+01:00");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatMicroTime(*t), "2026-11-22T09:00:00.500000Z");
  EXPECT_FALSE(ParseTime("2026-11-22 10:00:00").ok());
  EXPECT_FALSE(ParseTime("2026-13-22T10:00:00Z").ok());
}

TEST(TimeFormatTest, MetaTimeIsWholeSecondsAndBadTimesDoNotParse) {
  using std::chrono::seconds;
  const Clock::WallTime t{seconds(1767225600) + std::chrono::milliseconds(999)};
  EXPECT_EQ(FormatTime(t), "2026-01-01T00:00:00Z");
  EXPECT_EQ(TryParseTime("2026-01-01T00:00:00Z"), Clock::WallTime(seconds(1767225600)));
  EXPECT_EQ(TryParseTime("2026-01-01T01:00:00.5+01:00"),
            Clock::WallTime(seconds(1767225600) + std::chrono::milliseconds(500)));
  for (const char* bad :
       {"", "2026-01-01", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00Zjunk",
        "2026-01-01T25:00:00Z", "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01:60"}) {
    EXPECT_FALSE(TryParseTime(bad).has_value()) << bad;
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sluice
