#include "workers/rollout/rewards/answer_extraction.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::rollout {
namespace {

struct Case {
  std::string input;
  std::string want;
};

TEST(ExtractBoxedTest, Table) {
  const Case cases[] = {
      {"so \\boxed{42}", "42"},
      {"first \\boxed{1} then \\boxed{2} done", "2"},
      {"\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"},
      {"\\fbox{x+1}", "x+1"},
      {"$\\boxed {7}$", "7"},                 // TeX allows space before the group.
      {"$\\boxed 42$ and more", "42"},        // Brace-less form stops at '$'.
      {"\\boxed 3.5 cm", "3.5"},              // ... and at whitespace.
      {"\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"},  // Escaped braces do not count.
      {"\\boxed{a} \\boxed{b", "a"},          // A truncated last box is skipped.
      {"\\boxed{\\boxed{1}}", "\\boxed{1}"},  // A nested box belongs to the outer one.
      {"\\boxed{5} } \\boxed{6}", "6"},       // A stray closing brace is ignored.
      {"\\boxedfoo{1}", ""},                  // Another command.
      {"\\\\boxed{1}", ""},                   // "\\" is a line break, then the word "boxed".
      {"no box here {1}", ""},
      {"", ""},
      {"\\boxed{}", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(ExtractBoxed(c.input), c.want) << c.input;
}

TEST(ExtractBoxedTest, ManyUnclosedBoxesStayLinear) {
  // A hostile completion: each unclosed box would cost a scan to the end in a naive search.
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "\\boxed{";
  text += "\\boxed{9}";
  EXPECT_EQ(ExtractBoxed(text), "9");
}

TEST(ExtractAnswerTagTest, Table) {
  const Case cases[] = {
      {"<answer>42</answer>", "42"},
      {"<answer>1</answer> then <answer> 2 </answer>", " 2 "},
      {"<ANSWER>Paris</Answer>", "Paris"},
      {"<answer>1</answer> <answer>unfinished", "1"},
      {"</answer> <answer>x</answer>", "x"},
      {"<answer>no end", ""},
      {"no tags", ""},
      {"<answer></answer>", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(ExtractAnswerTag(c.input), c.want) << c.input;
}

TEST(FinalAnswerTextTest, Table) {
  const Case cases[] = {
      // The box wins over the tag and the marker.
      {"The answer is 3. <answer>4</answer> \\boxed{5}", "5"},
      {"The answer is 3. <answer> 4 </answer>", "4"},
      // A blank box or tag does not count.
      {"\\boxed{ } <answer>8</answer>", "8"},
      {"<answer>  </answer> The answer is 9", "9"},
      {"Thinking...\nThe answer is 42.\nDone.", "42."},
      {"So the final answer is: $12$", "$12$"},
      {"**Answer:** 7", "7"},
      {"**Final Answer**: x = 2", "x = 2"},
      {"The answer is **42**.", "42"},
      {"Final answer: **7** ", "7"},
      {"The answer is 2*3", "2*3"},
      {"ANSWER: yes", "yes"},
      {"The answer is 1. Wait, no. The answer is 2", "2"},
      {"Answer:\n\n  12  \nmore text", "12"},  // A marker ending its line: the next line.
      // Not markers: "answers", "answered", "answer isn't".
      {"The answers vary", "The answers vary"},
      {"I answered 3", "I answered 3"},
      {"the answer isn't clear", "the answer isn't clear"},
      {"The answer is", "The answer is"},  // A marker with nothing after it.
      {"  just 17 \n", "just 17"},
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(FinalAnswerText(c.input), c.want) << c.input;
}

TEST(NormaliseAnswerTest, Table) {
  const Case cases[] = {
      {"  Paris  ", "paris"},
      {"New\t \n York", "new york"},
      {"$42$", "42"},
      {"$$42$$", "42"},
      {"$42$.", "42"},
      {"42.", "42"},
      {"42..", "42."},  // One trailing period only.
      {"\"Paris\"", "paris"},
      {"'Paris'", "paris"},
      {"\"Paris.\"", "paris"},
      {"  The  \"Answer\". ", "the \"answer\""},
      {"\"mismatched'", "\"mismatched'"},
      {"$ 5 $", "5"},
      {"$", "$"},
      {".", ""},
      {"", ""},
      {"ÄBC", "Äbc"},  // Only ASCII letters are lower-cased.
  };
  for (const Case& c : cases) EXPECT_EQ(NormaliseAnswer(c.input), c.want) << c.input;
}

TEST(QuoteExcerptTest, QuotesAndCuts) {
  EXPECT_EQ(QuoteExcerpt("abc"), "\"abc\"");
  EXPECT_EQ(QuoteExcerpt("abcdef", 4), "\"abcd...\"");
  EXPECT_EQ(QuoteExcerpt("abcd", 4), "\"abcd\"");
  // "é" is two bytes; a cut after byte 2 would split it, so it backs off to byte 1.
  EXPECT_EQ(QuoteExcerpt("a\xC3\xA9z", 2), "\"a...\"");
}

}  // namespace
}  // namespace sluice::rollout
