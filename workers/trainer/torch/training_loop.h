// TrainingLoop: the steps every rank of a trainer gang runs in lock-step once the weights are
// loaded and the gang has met (sluice-trainer's main.cpp describes the whole program):
//
//   rank 0 long-polls GET /v1/batches/{policy} (retrying while the dataflow is unreachable, for
//   up to dataflow_timeout) and broadcasts the batch frame (an empty frame means stop, followed
//   by the reason: empty for SIGTERM, else the dataflow's "drained" message); every rank trains
//   on it; rank 0 acknowledges the batch (held, with checkpoints), publishes the new version to
//   its WeightStore and announces it, and writes the checkpoints RunSchedule asks for.
//
// After the loop, Finish writes the checkpoint of the steps since the last one when the run
// stopped early or starved, and after the last step hands the final weights to the dataflow
// (workers/weights/final_weights.h), which keeps them for replicas that join after the trainer
// is gone.
//
// Ownership: every reference in TrainingLoopParts belongs to the caller and outlives the loop.
// Thread safety: one thread (the rank's main thread) runs it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/logging/logger.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/trainer/retry_while_unavailable.h"
#include "workers/trainer/run_schedule.h"
#include "workers/trainer/torch/communicator.h"
#include "workers/trainer/torch/policy_trainer.h"
#include "workers/trainer/trainer_settings.h"
#include "workers/trainer/trainer_status.h"
#include "workers/weights/weight_store.h"

namespace sluice::trainer {

struct TrainingLoopParts {
  const TrainerSettings* settings = nullptr;
  PolicyTrainer* trainer = nullptr;
  Communicator* comm = nullptr;
  dataflow::DataflowClient* dataflow = nullptr;  // Used by rank 0 only.
  weights::WeightStore* store = nullptr;         // Rank 0's published versions.
  TrainerStatusBoard* board = nullptr;
  log::Logger* logger = nullptr;
  CancellationToken stop;  // SIGTERM.
  int rank = 0;
  int64_t steps = 0;           // Train until this step.
  std::string checkpoint_dir;  // Empty: no checkpoints.
  // Announced weights URL prefix; the version number is appended ("http://host:port/v1/weights/").
  std::string weights_base;
  std::chrono::seconds batch_wait{10};  // Long-poll wait of each batch request.
  std::chrono::nanoseconds dataflow_timeout{std::chrono::seconds(600)};
  int64_t groups_per_batch = 0;  // 0: the dataflow's setting.
  // The loop's time: data waits, publish times, the dataflow timeout. Borrowed; null: the system
  // clock.
  Clock* clock = nullptr;
};

// parts.clock, or the system clock.
inline Clock& LoopClock(const TrainingLoopParts& parts) { return ClockOrSystem(parts.clock); }

// A step that failed: `what` names it for the log ("training step failed").
struct LoopFailure {
  std::string what;
  Status status;
};

struct LoopOutcome {
  RunEnd end = RunEnd::kStopped;
  std::optional<LoopFailure> failure;  // Set: the run failed (`end` is then meaningless).
};

class TrainingLoop {
 public:
  // `schedule` carries what the resume found (RunSchedule::Resumed).
  TrainingLoop(TrainingLoopParts parts, RunSchedule schedule);

  // Rank 0: publishes the trainer's current version to the store and announces it to the
  // dataflow (versions from 1; the weights a warm start ends with are announced for evaluation).
  // `publish_seconds`, when given, receives the time the publication took.
  Status PublishAndAnnounce(double* publish_seconds = nullptr);

  // Trains until parts.steps, SIGTERM or the end of the data. The figures go to the board, a line
  // per step to the log.
  LoopOutcome Run();

  // After Run: the end-of-run checkpoint (rank 0) and, after the last step, the final weights
  // handed to the dataflow (not fatal when it refuses). A failure is returned as for Run.
  std::optional<LoopFailure> Finish(RunEnd end);

  // Why the dataflow can no longer feed the policy (after Run returned kStarved).
  const std::string& starved_reason() const { return starved_; }

 private:
  // Rank 0: the next batch frame; "" to stop (SIGTERM, or drained: starved_ is then set).
  Result<std::string> TakeFrame();
  // Rank 0: acknowledges `batch_id` (held with checkpoints); failures are logged, not fatal.
  void Acknowledge(const std::string& batch_id);
  // Rank 0: writes and commits the checkpoint of the current step, then releases held batches.
  Status WriteCheckpoint(bool last);

  TrainingLoopParts p_;
  Clock& clock_;  // LoopClock(p_).
  RunSchedule schedule_;
  std::string starved_;
};

}  // namespace sluice::trainer
