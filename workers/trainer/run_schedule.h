// RunSchedule: what rank 0 does around checkpoints and the dataflow's held batches, decided from
// counters, so the training loop (torch/training_loop.h) only carries the decisions out.
//
// - A checkpoint follows every spec.checkpoint.everySteps steps and the last step; a run that
//   stops early (SIGTERM) or runs out of data writes one of the steps since the last, so the
//   batches the dataflow holds for them are not trained again after a restart.
// - Held acknowledgements (workers/dataflow/dataflow_core.h): each acknowledged batch gets a hold
//   number; a checkpoint records the newest (held_through). The dataflow keeps the batches of the
//   newest checkpoint's interval one checkpoint longer (a checkpoint releases through the
//   previous checkpoint's number), so a resume that falls back from a damaged newest checkpoint
//   still gets them back; the last step's checkpoint releases everything.
// - The weights a warm start ends with are announced for evaluation (version spec.warmStart.steps,
//   "before RL"); versions are announced from 1.
//
// Thread safety: a value type; one thread (rank 0's loop) uses it.
#pragma once

#include <cstdint>

namespace sluice::trainer {

// How the loop ended.
enum class RunEnd {
  kFinished,  // --steps steps trained.
  kStopped,   // SIGTERM between steps.
  kStarved,   // The dataflow can never feed the policy again.
};

class RunSchedule {
 public:
  // `steps`: the run's last step; `every_steps`: spec.checkpoint.everySteps, 0 without
  // checkpoints (then nothing is checkpointed and no batch is held).
  RunSchedule(int64_t steps, int64_t every_steps) : steps_(steps), every_steps_(every_steps) {}

  bool checkpoints() const { return every_steps_ > 0; }

  // Resumed from the checkpoint of `step` recording `held_through` (or from nothing: step -1,
  // held_through 0).
  void Resumed(int64_t step, int64_t held_through);

  // The dataflow acknowledged a batch held with number `hold` (0: acknowledged for good).
  void Held(int64_t hold);

  // After training `step`: whether to write its checkpoint now.
  bool CheckpointAfterStep(int64_t step) const;

  // When the loop ended at `step`: whether to write a checkpoint of the steps since the last one.
  bool CheckpointAtEnd(RunEnd end, int64_t step) const;

  // The checkpoint of `step` (the last step's when `last`) is committed: records it and returns
  // the hold number to release the dataflow's held batches through.
  int64_t Committed(int64_t step, bool last);

  // Whether `version`, trained through `step`, is announced for evaluation.
  static bool EvaluateOnAnnounce(bool warm_start, int64_t step) { return warm_start && step == 0; }
  // Whether `version` is announced at all (the dataflow counts versions from 1).
  static bool Announced(int64_t version) { return version >= 1; }

  int64_t held_through() const { return held_through_; }
  int64_t checkpointed_step() const { return checkpointed_step_; }

 private:
  int64_t steps_;
  int64_t every_steps_;
  int64_t checkpointed_step_ = -1;  // Of the newest checkpoint written or resumed from.
  int64_t held_through_ = 0;        // The newest hold number the weights trained on.
  int64_t release_next_ = 0;        // The newest checkpoint's number, released at the next.
};

}  // namespace sluice::trainer
