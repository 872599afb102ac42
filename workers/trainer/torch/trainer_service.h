// ServeTrainer: the body of sluice-trainer (main.cpp): one rank of the data-parallel gang that
// trains one Policy from the batches of one Dataflow (docs/trainer.md). It implements the trainer
// worker contract of operator/controllers/trainerjob/desired_pods.h: flags, /healthz, /readyz, GET
// /v1/status, and on rank 0 the weights routes (GET /v1/weights/...) and POST
// /v1/weights/{version}/export, which writes a held version as a Hugging Face model directory
// <export root>/<policy>-v<version> (weights/hf_export.h; the root is --export-dir, default
// <checkpoint-dir>/exports).
//
// Loop (every rank runs the same steps in lock-step; torch/training_loop.h, with the checkpoint
// schedule in run_schedule.h):
//   rank 0 long-polls GET /v1/batches/{policy} and broadcasts the batch frame to the other ranks
//   (an empty frame means stop); every rank trains on it (PolicyTrainer::Step); rank 0 then
//   acknowledges the batch, publishes the new version to its WeightStore, announces it to the
//   dataflow (POST /v1/policies/{policy}/versions) and writes a checkpoint every
//   spec.checkpoint.everySteps steps and after the last one. The process exits 0 after
//   --steps steps.
//
// Warm start (spec.warmStart; torch/warm_start_runner.h): before the loop, every rank runs the
// supervised steps on the Dataflow's training split (rank 0 reads it from GET /v1/dataset/train
// and broadcasts it); RL then starts from those weights, which rank 0 publishes and announces as
// version spec.warmStart.steps with "evaluate": true, so the Dataflow evaluates exactly the model
// RL starts from. RL step k publishes version spec.warmStart.steps + k.
//
// Restarts: before it publishes, rank 0 reads the dataflow's newest announcement of the policy
// (GET /v1/versions). When a dead run announced versions at or above the resumed one, and the
// newest is not these very weights, training continues above it (version_continuity.h), so a
// version number never names two weight images; an announcement the dataflow refuses (409)
// fails the run.
//
// A Policy whose spec.model.source is a uri is downloaded into --model-cache-dir (or found there
// complete) after the HTTP server starts and before the rendezvous (FetchModelSource).
//
// SIGTERM stops between steps: the batch in hand (if any) is not acknowledged, so the dataflow
// serves it again (at once to a restarted trainer); with checkpoints, rank 0 then checkpoints the
// steps since the last one. Nothing accepted is lost.
//
// Exactly once: with checkpoints, rank 0 acknowledges each batch held (POST .../ack {"hold":
// true}; workers/dataflow/dataflow_core.h, "Held acknowledgements"), records the newest hold
// number in each checkpoint (dataflow.json) and releases the held batches through it once the
// checkpoint is committed. On start it asks the dataflow to take back every batch held after the
// checkpoint it resumed from (POST .../held/resume): those, and the dead run's batch in hand, are
// served again in order, so every batch is trained exactly once in the weights that survive.
//
// The end of the data: when the dataflow answers that it can never feed this policy again (410
// DataflowDrained: the dataset is exhausted and what is left cannot fill a batch) before --steps,
// rank 0 stops the gang like a SIGTERM (an empty frame, then the reason), writes a checkpoint of
// the last step (when checkpoints are configured and it has none yet), and every rank sets phase
// "Starved" with the dataflow's message and keeps serving /v1/status (and rank 0 the weights)
// until SIGTERM: the operator reads the phase and ends the TrainerJob (Failed, DataExhausted).
//
// The end: after the last step rank 0 keeps serving its weights and /v1/status (phase
// Succeeded) for --final-weights-grace or until SIGTERM, so replicas still loading the final
// version can finish (the operator stops it once every pool holds it:
// operator/controllers/trainerjob/final_weights.h).
//
// Exit status: 0 after the last step (or a clean stop), 1 for a runtime failure (a rank died, the
// dataflow is unreachable for longer than --dataflow-timeout) and for a SIGTERM while Starved (so
// the pod never reads as having completed the job), 2 for bad flags or config.
//
// Thread safety: called once, from RunService's body (common/service/service_main.h).
#pragma once

#include <string>

#include "common/service/service_main.h"

namespace sluice::trainer {

// Runs this rank with the flags in `svc` (trainer_flags.h) and trainer.json at `trainer_config`;
// returns the exit status above.
int ServeTrainer(service::Service& svc, const std::string& trainer_config);

}  // namespace sluice::trainer
