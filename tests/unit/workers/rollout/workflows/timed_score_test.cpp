// ScoreTimed: the score and the time scoring took on the clock given; a reward that throws or
// scores outside [0, 1] scores 0 with an error.
#include "workers/rollout/workflows/timed_score.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/clock.h"

namespace sluice::rollout {
namespace timed_score_test {

// Scores `score` after `takes` of the fake clock; throws when `throws`.
class SlowReward final : public Reward {
 public:
  SlowReward(FakeClock& clock, std::chrono::milliseconds takes, double score, bool throws = false)
      : clock_(clock), takes_(takes), score_(score), throws_(throws) {}
  std::string_view name() const override { return "slow"; }
  RewardOutcome Score(const RewardInput&) const override {
    clock_.Advance(takes_);
    if (throws_) throw std::runtime_error("reward exploded");
    RewardOutcome out;
    out.score = score_;
    return out;
  }

 private:
  FakeClock& clock_;
  std::chrono::milliseconds takes_;
  double score_;
  bool throws_;
};

TEST(TimedScoreTest, ScoreAndTimeOnTheGivenClock) {
  struct Case {
    std::string name;
    double score;
    bool throws;
    double want_score;
    bool want_error;
  };
  const Case cases[] = {
      {"in range", 0.75, false, 0.75, false},
      {"above one", 1.5, false, 0, true},
      {"negative", -0.1, false, 0, true},
      {"not a number", std::numeric_limits<double>::quiet_NaN(), false, 0, true},
      {"throws", 1, true, 0, true},
  };
  LeasedTask task;
  task.answer = "42";
  for (const Case& c : cases) {
    FakeClock clock;
    SlowReward reward(clock, std::chrono::milliseconds(1500), c.score, c.throws);
    const TimedScore timed = ScoreTimed(reward, "42", task, clock);
    EXPECT_EQ(timed.outcome.score, c.want_score) << c.name;
    EXPECT_EQ(timed.outcome.error, c.want_error) << c.name;
    EXPECT_DOUBLE_EQ(timed.seconds, 1.5) << c.name;
  }
}

}  // namespace timed_score_test
}  // namespace sluice::rollout
