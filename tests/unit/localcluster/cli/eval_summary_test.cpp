// Tests of the eval line `sluice run` prints after success (eval_summary.h): the earliest and
// latest evaluation per TrainerJob of the rows seen during the run, as table cases.
#include "localcluster/cli/eval_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {
namespace {

// A row of `trainer` with the Dataflow's evaluation (version, accuracy); nullopt leaves it out.
ProgressRow Row(const std::string& trainer, std::optional<int64_t> version,
                std::optional<double> accuracy) {
  ProgressRow row;
  row.trainer = trainer;
  row.eval_version = version;
  row.eval_accuracy = accuracy;
  return row;
}

TEST(EvalSummaryTest, FormatPercent) {
  struct Case {
    double share;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{{0.125, "12.5"},
                                         {0.41, "41.0"},
                                         {0.333, "33.3"},
                                         {0, "0.0"},
                                         {1, "100.0"},
                                         {0.9999, "100.0"},
                                         {0.1234, "12.3"}}) {
    EXPECT_EQ(FormatPercent(c.share), c.want) << c.share;
  }
}

TEST(EvalSummaryTest, Lines) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::string name;
    std::vector<ProgressRow> rows;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no rows", {}, ""},
      {"no evaluation in any row",
       {Row("t", std::nullopt, std::nullopt), Row("t", std::nullopt, std::nullopt)},
       ""},
      {"a version without an accuracy, or the reverse, does not count",
       {Row("t", 10, std::nullopt), Row("t", std::nullopt, 0.5)},
       ""},
      {"a non-finite accuracy does not count", {Row("t", 10, nan)}, ""},
      {"one evaluation, seen in many rows",
       {Row("t", std::nullopt, std::nullopt), Row("t", 200, 0.41), Row("t", 200, 0.41)},
       "eval accuracy: 41.0% at version 200 (no later evaluation)\n"},
      {"before and after",
       {Row("t", std::nullopt, std::nullopt), Row("t", 0, 0.125), Row("t", 0, 0.125),
        Row("t", 50, 0.3), Row("t", 200, 0.41)},
       "eval accuracy: before 12.5% -> after 41.0% (versions 0 -> 200)\n"},
      {"lowest and highest version, whatever the order they were seen in",
       {Row("t", 100, 0.3), Row("t", 50, 0.2), Row("t", 150, 0.35), Row("t", 120, 0.9)},
       "eval accuracy: before 20.0% -> after 35.0% (versions 50 -> 150)\n"},
      {"the first row of the lowest version and the last row of the highest",
       {Row("t", 10, 0.1), Row("t", 10, 0.15), Row("t", 20, 0.2), Row("t", 20, 0.25)},
       "eval accuracy: before 10.0% -> after 25.0% (versions 10 -> 20)\n"},
      {"accuracy may fall",
       {Row("t", 0, 0.5), Row("t", 10, 0.25)},
       "eval accuracy: before 50.0% -> after 25.0% (versions 0 -> 10)\n"},
      {"one TrainerJob among several has evaluations: no name",
       {Row("a", std::nullopt, std::nullopt), Row("b", 0, 0.1), Row("b", 10, 0.2)},
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10)\n"},
      {"several TrainerJobs: one line each, named, in order of first appearance",
       {Row("b", 10, 0.4), Row("a", 0, 0.1), Row("b", 20, 0.5), Row("a", 10, 0.2)},
       "eval accuracy: before 40.0% -> after 50.0% (versions 10 -> 20) [b]\n"
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10) [a]\n"},
      {"several TrainerJobs, one with a single evaluation",
       {Row("a", 0, 0.1), Row("b", 30, 0.6), Row("a", 10, 0.2)},
       "eval accuracy: before 10.0% -> after 20.0% (versions 0 -> 10) [a]\n"
       "eval accuracy: 60.0% at version 30 (no later evaluation) [b]\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(EvalSummary(c.rows), c.want) << c.name;
}

TEST(EvalSummaryTest, SpansAndTheGreppablePrefix) {
  const std::vector<EvalSpan> spans =
      EvalSpans({Row("t", 30, 0.3), Row("t", 0, 0.05), Row("u", 5, 0.5), Row("t", 60, 0.6)});
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0], (EvalSpan{"t", 0, 0.05, 60, 0.6}));
  EXPECT_EQ(spans[1], (EvalSpan{"u", 5, 0.5, 5, 0.5}));
  // Scripts grep this prefix; it starts the line.
  const std::string line = EvalSummary({Row("t", 0, 0.125), Row("t", 200, 0.41)});
  EXPECT_EQ(line.rfind("eval accuracy: before 12.5% -> after 41.0%", 0), 0u) << line;
}

}  // namespace
}  // namespace sluice::cli
