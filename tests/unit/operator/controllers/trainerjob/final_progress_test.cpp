#include "operator/controllers/trainerjob/final_progress.h"

#include <gtest/gtest.h>

namespace sluice::controllers {
namespace {

TEST(FinalProgressTest, CountsStepsAfterTheLastReport) {
  struct Case {
    const char* name;
    TrainerProgress reported;
    int64_t warm;
    int64_t steps;
    TrainerProgress want;
  };
  const Case cases[] = {
      {"no report read", {0, 0}, 0, 10, {10, 10}},
      {"no report, warm start", {0, 0}, 5, 10, {10, 15}},
      {"the last report is final", {10, 10}, 0, 10, {10, 10}},
      {"two steps after the last report", {8, 8}, 0, 10, {10, 10}},
      {"two steps after, warm start", {8, 13}, 5, 10, {10, 15}},
      {"continued above a dead run's versions", {8, 21}, 0, 10, {10, 23}},
      {"continued, final report", {10, 23}, 0, 10, {10, 23}},
      {"a report below the spec's floor", {10, 4}, 0, 10, {10, 10}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FinalProgress(c.reported, c.warm, c.steps), c.want) << c.name;
  }
}

TEST(ReportedProgressTest, IgnoresAnInitializingRankAndNeverLowersTheVersion) {
  struct Case {
    const char* name;
    TrainerProgress current;
    const char* phase;
    TrainerProgress reported;
    TrainerProgress want;
  };
  const Case cases[] = {
      {"a running report", {10, 15}, "Running", {12, 17}, {12, 17}},
      {"the first report", {0, 0}, "Running", {1, 6}, {1, 6}},
      {"a restarted gang still initializing", {30, 90}, "Initializing", {0, 0}, {30, 90}},
      {"no phase in the report", {30, 90}, "", {0, 0}, {30, 90}},
      {"resumed from an older checkpoint, versions continued",
       {30, 90},
       "Running",
       {26, 91},
       {26, 91}},
      {"resumed, a report before the first new version", {30, 90}, "Running", {25, 85}, {25, 90}},
      {"finished", {148, 208}, "Succeeded", {150, 210}, {150, 210}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ReportedProgress(c.current, c.phase, c.reported), c.want) << c.name;
  }
}

}  // namespace
}  // namespace sluice::controllers
