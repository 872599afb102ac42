#include "workers/rollout/engine/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::engine {
namespace {

TEST(FindStopTest, FindsAStopAndCutsBeforeIt) {
  const std::vector<std::string> stops = {"</answer>"};
  EXPECT_EQ(FindStop("42</answer> trailing", 0, stops), 2u);
  EXPECT_EQ(FindStop("no stop here", 0, stops), std::nullopt);
  EXPECT_EQ(FindStop("", 0, stops), std::nullopt);
}

TEST(FindStopTest, EarliestOfSeveralStopsWins) {
  const std::vector<std::string> stops = {"STOP", "\n\n", "x"};
  EXPECT_EQ(FindStop("ab\n\ncdSTOPx", 0, stops), 2u);
  EXPECT_EQ(FindStop("abSTOP\n\n", 0, stops), 2u);
  // Overlapping candidates: the one beginning first wins even if it ends later.
  EXPECT_EQ(FindStop("aSTOx", 0, std::vector<std::string>{"STOx", "x"}), 1u);
}

TEST(FindStopTest, AStopSplitAcrossStepsIsFound) {
  const std::vector<std::string> stops = {"<|end|>"};
  std::string text;
  size_t checked = 0;
  std::optional<size_t> found;
  for (std::string piece : {"Hello <|", "en", "d|", ">tail"}) {
    text += piece;
    found = FindStop(text, checked, stops);
    if (found) break;
    checked = text.size();
  }
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, 6u);
  EXPECT_EQ(text.substr(0, *found), "Hello ");
}

TEST(FindStopTest, OnlyLooksAtMatchesEndingAfterCheckedUpto) {
  const std::vector<std::string> stops = {"ab"};
  // "ab" at 0 ends at 2 <= checked_upto 3: already reported by an earlier call.
  EXPECT_EQ(FindStop("abxab", 3, stops), 3u);
  EXPECT_EQ(FindStop("abxa", 3, stops), std::nullopt);
  // A match that started before checked_upto but ends after it is found.
  EXPECT_EQ(FindStop("xxab", 3, stops), 2u);
}

TEST(StreamableLengthTest, HoldsBackAPossibleStopPrefix) {
  const std::vector<std::string> stops = {"</answer>", "END"};
  EXPECT_EQ(StreamableLength("the answer is 4</ans", stops), 15u);
  EXPECT_EQ(StreamableLength("the answer is 4<", stops), 15u);
  EXPECT_EQ(StreamableLength("so E", stops), 3u);
  EXPECT_EQ(StreamableLength("so EN", stops), 3u);
  EXPECT_EQ(StreamableLength("so ENx", stops), 6u);
  EXPECT_EQ(StreamableLength("plain", stops), 5u);
  EXPECT_EQ(StreamableLength("plain", {}), 5u);
  EXPECT_EQ(StreamableLength("", stops), 0u);
  // The longest matching suffix is held, not the first stop's.
  EXPECT_EQ(StreamableLength("aab", std::vector<std::string>{"bc", "aabc"}), 0u);
}

TEST(StreamableLengthTest, NeverSplitsAUtf8CodePoint) {
  const std::string euro = "\xE2\x82\xAC";       // U+20AC, 3 bytes.
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600, 4 bytes.
  EXPECT_EQ(StreamableLength("ab" + euro, {}), 5u);
  EXPECT_EQ(StreamableLength("ab" + euro.substr(0, 2), {}), 2u);
  EXPECT_EQ(StreamableLength("ab" + euro.substr(0, 1), {}), 2u);
  EXPECT_EQ(StreamableLength("ab" + emoji.substr(0, 3), {}), 2u);
  EXPECT_EQ(StreamableLength("ab" + emoji, {}), 6u);
  EXPECT_EQ(StreamableLength("\xC3\xA9", {}), 2u);  // é, complete.
  EXPECT_EQ(StreamableLength("\xC3", {}), 0u);
  // A held-back stop prefix that begins inside a code point pulls the cut before it.
  EXPECT_EQ(StreamableLength("x" + euro, std::vector<std::string>{"\xAC!"}), 1u);
  // Stray continuation bytes are streamed rather than held forever.
  EXPECT_EQ(StreamableLength("a\x80\x80\x80\x80", {}), 5u);
}

TEST(StreamableLengthTest, StreamedBytesAreNeverRetracted) {
  const std::vector<std::string> stops = {"abcab", "b\xE2\x82\xAC"};
  const std::string full = "xxabcabyab\xE2\x82\xAC";
  size_t streamed = 0;
  size_t checked = 0;
  for (size_t len = 1; len <= full.size(); ++len) {
    const std::string_view text(full.data(), len);
    std::optional<size_t> stop = FindStop(text, checked, stops);
    if (stop) {
      EXPECT_GE(*stop, streamed) << "stop at " << *stop << " but streamed " << streamed;
      EXPECT_EQ(*stop, 2u);
      return;
    }
    checked = len;
    const size_t now = StreamableLength(text, stops);
    EXPECT_GE(now, streamed);
    streamed = now;
  }
  FAIL() << "the stop string was never found";
}

}  // namespace
}  // namespace sluice::engine
