#include "workers/trainer/run_schedule.h"

#include <algorithm>

namespace sluice::trainer {

void RunSchedule::Resumed(int64_t step, int64_t held_through) {
  checkpointed_step_ = step;
  held_through_ = held_through;
  release_next_ = held_through;
}

void RunSchedule::Held(int64_t hold) { held_through_ = std::max(held_through_, hold); }

bool RunSchedule::CheckpointAfterStep(int64_t step) const {
  return checkpoints() && (step % every_steps_ == 0 || step == steps_);
}

bool RunSchedule::CheckpointAtEnd(RunEnd end, int64_t step) const {
  // A finished run checkpointed its last step already (CheckpointAfterStep).
  return checkpoints() && end != RunEnd::kFinished && step > 0 && checkpointed_step_ != step;
}

int64_t RunSchedule::Committed(int64_t step, bool last) {
  const int64_t release = last ? held_through_ : release_next_;
  release_next_ = held_through_;
  checkpointed_step_ = step;
  return release;
}

}  // namespace sluice::trainer
