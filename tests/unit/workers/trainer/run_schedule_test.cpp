// RunSchedule: which steps are checkpointed, what a checkpoint releases of the dataflow's held
// batches, and which versions are announced and evaluated, as sequences of a run's events.
#include "workers/trainer/run_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::trainer {
namespace run_schedule_test {

TEST(RunScheduleTest, CheckpointsEveryStepsAndTheLastOne) {
  struct Case {
    int64_t steps, every;
    std::vector<int64_t> checkpointed;
  };
  const Case cases[] = {
      {10, 4, {4, 8, 10}},     {8, 4, {4, 8}}, {3, 5, {3}},
      {5, 1, {1, 2, 3, 4, 5}}, {6, 0, {}},  // No checkpoints configured.
  };
  for (const Case& c : cases) {
    RunSchedule s(c.steps, c.every);
    std::vector<int64_t> got;
    for (int64_t step = 1; step <= c.steps; ++step) {
      if (s.CheckpointAfterStep(step)) got.push_back(step);
    }
    EXPECT_EQ(got, c.checkpointed) << c.steps << " steps, every " << c.every;
  }
}

TEST(RunScheduleTest, AnEarlyEndCheckpointsTheStepsSinceTheLastCheckpoint) {
  struct Case {
    RunEnd end;
    int64_t every, checkpointed, step;
    bool want;
  };
  const Case cases[] = {
      {RunEnd::kStopped, 4, 4, 6, true},     // Steps 5 and 6 are not durable yet.
      {RunEnd::kStarved, 4, 4, 6, true},     // Likewise when the data ran out.
      {RunEnd::kStopped, 4, 4, 4, false},    // Nothing since the last checkpoint.
      {RunEnd::kStopped, 4, -1, 0, false},   // Nothing trained.
      {RunEnd::kFinished, 4, 8, 10, false},  // The last step was checkpointed in the loop.
      {RunEnd::kStopped, 0, -1, 6, false},   // No checkpoints configured.
  };
  for (const Case& c : cases) {
    RunSchedule s(10, c.every);
    s.Resumed(c.checkpointed, 0);
    EXPECT_EQ(s.CheckpointAtEnd(c.end, c.step), c.want)
        << "end " << static_cast<int>(c.end) << ", checkpointed " << c.checkpointed << ", step "
        << c.step;
  }
}

TEST(RunScheduleTest, ACheckpointReleasesThroughThePreviousCheckpointsHoldsAndTheLastReleasesAll) {
  RunSchedule s(6, 2);
  s.Resumed(-1, 0);
  // Steps 1-2 acknowledged with holds 1, 2; the checkpoint of step 2 records 2 and releases
  // through 0 (the previous checkpoint's number), keeping 1-2 one checkpoint longer.
  s.Held(1);
  s.Held(2);
  EXPECT_EQ(s.held_through(), 2);
  EXPECT_EQ(s.Committed(2, false), 0);
  EXPECT_EQ(s.checkpointed_step(), 2);
  s.Held(3);
  s.Held(0);  // Acknowledged for good: no hold number; the newest stays 3.
  s.Held(4);
  EXPECT_EQ(s.Committed(4, false), 2);
  s.Held(5);
  s.Held(6);
  EXPECT_EQ(s.Committed(6, true), 6);  // The last step's checkpoint releases everything.
  EXPECT_EQ(s.checkpointed_step(), 6);
}

TEST(RunScheduleTest, AResumeReleasesFromTheCheckpointItResumedFrom) {
  RunSchedule s(10, 3);
  s.Resumed(3, 7);  // The checkpoint of step 3 recorded hold 7.
  EXPECT_EQ(s.held_through(), 7);
  EXPECT_FALSE(s.CheckpointAtEnd(RunEnd::kStopped, 3));
  s.Held(8);
  EXPECT_TRUE(s.CheckpointAtEnd(RunEnd::kStopped, 4));
  EXPECT_EQ(s.Committed(6, false), 7);
  EXPECT_EQ(s.held_through(), 8);
}

TEST(RunScheduleTest, AnnouncementsStartAtVersionOneAndEvaluateOnlyTheWarmStartsWeights) {
  EXPECT_FALSE(RunSchedule::Announced(0));
  EXPECT_TRUE(RunSchedule::Announced(1));
  EXPECT_TRUE(RunSchedule::EvaluateOnAnnounce(true, 0));
  EXPECT_FALSE(RunSchedule::EvaluateOnAnnounce(true, 1));
  EXPECT_FALSE(RunSchedule::EvaluateOnAnnounce(false, 0));
}

}  // namespace run_schedule_test
}  // namespace sluice::trainer
