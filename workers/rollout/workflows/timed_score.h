// TimedScore: a reward's score of one response together with the time scoring took, so a
// workflow can fill Sample::reward_seconds and count failed rewards.
//
// Thread safety: pure function over a const Reward (which may be scored from many threads).
#pragma once

#include <string_view>

#include "common/clock.h"
#include "workers/rollout/leased_task.h"
#include "workers/rollout/rewards/reward.h"

namespace sluice::rollout {

struct TimedScore {
  RewardOutcome outcome;
  double seconds = 0;  // Time of the call, on the clock given.
};

// ScoreSafely(reward, {response, task.answer, &task.row}), timed on `clock`. Never fails: a reward
// that throws scores 0 with outcome.error set; a score outside [0, 1] (or not a number) is a broken
// reward and is treated the same way.
TimedScore ScoreTimed(const Reward& reward, std::string_view response, const LeasedTask& task,
                      const Clock& clock);

}  // namespace sluice::rollout
