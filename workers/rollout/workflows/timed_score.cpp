#include "workers/rollout/workflows/timed_score.h"

#include <chrono>
#include <cmath>
#include <string>

namespace sluice::rollout {

TimedScore ScoreTimed(const Reward& reward, std::string_view response, const LeasedTask& task,
                      const Clock& clock) {
  const Clock::MonoTime start = clock.Now();
  RewardInput input;
  input.response = response;
  input.answer = task.answer;
  input.row = &task.row;
  TimedScore timed;
  timed.outcome = ScoreSafely(reward, input);
  const double score = timed.outcome.score;
  if (!std::isfinite(score) || score < 0 || score > 1) {
    timed.outcome.detail = "reward \"" + std::string(reward.name()) + "\" returned " +
                           std::to_string(score) + ", outside [0, 1]";
    timed.outcome.score = 0;
    timed.outcome.error = true;
  }
  timed.seconds = std::chrono::duration<double>(clock.Now() - start).count();
  return timed;
}

}  // namespace sluice::rollout
