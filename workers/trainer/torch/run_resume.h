// ResumeRun: where a gang that starts, or starts again after a failure, continues from, decided
// before its first step (docs/trainer.md, "Checkpoints"):
//
//   1. Every rank loads the newest usable checkpoint of the checkpoint directory into its
//      trainer: newest first, a damaged one (checksums, or a state that does not load) falls
//      back to the one before it; none at all starts from the initial weights, but checkpoints
//      that are all unusable fail the run.
//   2. Rank 0 asks the dataflow to take back every batch acknowledged held after that checkpoint
//      (POST .../held/resume): those, and the dead run's batch in hand, are served again in
//      order, so each is trained exactly once in the weights that survive.
//   3. Rank 0 decides the version to continue at (version_continuity.h): above what the dataflow
//      already announced for the policy (a dead run's versions), unless that is these very
//      weights, so a version number never names two weight images; it broadcasts the number and
//      every rank continues at it.
//
// Ownership and threading as TrainingLoop (training_loop.h): every rank calls it once, in
// lock-step, on its main thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "workers/trainer/torch/training_loop.h"

namespace sluice::trainer {

struct ResumeOutcome {
  int64_t checkpointed_step = -1;  // The checkpoint resumed from; -1: none.
  int64_t held_through = 0;        // The newest hold number that checkpoint recorded.
  std::optional<LoopFailure> failure;
};

// `checkpoint_dir`: where checkpoints are read from ("" : none), even when this run writes none.
ResumeOutcome ResumeRun(const TrainingLoopParts& parts, const std::string& checkpoint_dir);

}  // namespace sluice::trainer
