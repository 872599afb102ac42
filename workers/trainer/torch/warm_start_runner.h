// RunWarmStart: the supervised warm start of a TrainerJob with spec.warmStart, run by every rank
// of the gang in lock-step before RL (warm_start.h builds the batches; docs/trainer.md, "Warm
// start").
//
//   1. Resume: with a checkpoint directory holding warm-start/ (written by step 4 of an earlier
//      run of this job), its state is loaded and nothing is trained again.
//   2. Rows: rank 0 reads the Dataflow's whole training split (`fetch_rows`, retried until it
//      answers) and broadcasts it, so every rank trains on the same rows.
//   3. spec.warmStart.steps supervised steps (algorithm sft, learning rate spec.warmStart.lr
//      after a linear warm-up over spec.warmStart.warmupSteps, spec.optimizer's betas/eps/weight
//      decay/clipping), each on
//      spec.warmStart.promptsPerStep rows (WarmStartRows, seeded by the model source), in the
//      transcript shape of the Policy's role (TrainerSettings::warm_start_transcript: warm_start.h,
//      verifier_warm_start.h, calculator_warm_start.h).
//   4. With a checkpoint directory, rank 0 saves the state to <dir>/warm-start (written to a
//      temporary sibling and renamed, so a crash leaves either nothing or the whole state).
// The returned trainer's model() holds the warm-started weights; the RL trainer copies them
// (CopyWeights) as its initial and reference weights and publishes them as version
// spec.warmStart.steps.
//
// Thread safety: one thread per rank; `comm` is used collectively.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/trainer/torch/communicator.h"
#include "workers/trainer/torch/policy_trainer.h"
#include "workers/trainer/trainer_settings.h"

namespace sluice::trainer {

struct WarmStartInputs {
  const TrainerSettings* settings = nullptr;  // With spec.warm_start set. Not owned.
  ModelLoader loader;                         // The Policy's initial weights.
  Communicator* comm = nullptr;               // Not owned.
  // Rank 0 only: the Dataflow's training split (DataflowClient::AllTrainRows).
  std::function<Result<std::vector<dataflow::PromptRow>>()> fetch_rows;
  std::chrono::nanoseconds fetch_timeout = std::chrono::minutes(10);  // Give up after this.
  const Clock* clock = nullptr;  // fetch_timeout's time; null: the system clock.
  std::string checkpoint_dir;    // "": no resume, no save.
  const log::Logger* logger = nullptr;
  CancellationToken stop;  // Checked between steps and fetch retries: Cancelled.
  // Called after every supervised step with its report and the steps in all (may be empty).
  std::function<void(const StepReport&, int64_t)> on_step;
};

// Runs (or resumes) the warm start. Errors: Cancelled on stop; InvalidArgument naming
// spec.warmStart.warmupSteps when it is not below spec.warmStart.steps; naming spec.warmStart for
// an empty training split or a row the shape cannot use (no answer; for the verifier, an answer
// without a digit; for the calculator, no usable "expression"); the dataflow's, the collectives'
// and the checkpoint I/O's errors.
Result<std::unique_ptr<PolicyTrainer>> RunWarmStart(const WarmStartInputs& in);

// Copies every parameter of `from` into `to` (same architecture; InvalidArgument naming the
// first parameter whose name or shape differs).
Status CopyWeights(const model::DecoderModel& from, model::DecoderModel& to);

}  // namespace sluice::trainer
