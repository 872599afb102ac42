// PolicyTrainer: one training step of one policy on one dataflow batch, on every rank of a
// data-parallel gang (docs/trainer.md, "Training step").
//
// Step(batch), called with the same batch on every rank:
//   1. Sequences (ToTrainSequences) and their shaped rewards (DAPO overlong penalty), then
//      per-sequence advantages: group / mean-only / leave-one-out (GroupAdvantages), or the raw
//      reward for batch / none.
//   2. Layout (batch_layout.h): `minibatches` parts balanced by tokens, each split over the ranks,
//      each rank's share packed into micro-batches of at most spec.microBatchTokens tokens.
//   3. Before any update, per rank and without gradients: the proximal log-probs (the current
//      weights' log-probs of every target, the PPO "old" policy), the reference log-probs (klCoef
//      > 0: the frozen initial weights) and the critic's values (ppo). With one minibatch and no
//      KL-in-reward the proximal log-probs are instead the update pass's own, detached: the same
//      weights, one policy forward fewer (ProximalLogProbsFromUpdatePass, batch_layout.h).
//   4. Token advantages: TokenRewards (KL-in-reward with klPenalty reward) then GAE(gamma, lambda)
//      over each sequence, scaled by the dataflow's staleness loss weight; with normalization
//      batch, normalised over all ranks' generated tokens (moments all-reduced).
//   5. Per minibatch: forward/backward of every micro-batch with the loss normalised by the
//      minibatch's global totals, gradients all-reduced in buckets, the global norm clipped, the
//      learning rate of this optimizer update set (lr_schedule.h), one AdamW step (the critic's
//      likewise with its own optimizer).
//   6. Statistics summed over micro-batches and ranks; step and version advance by one.
// The initial weights are version options.version_base (0 unless a warm start came first); after
// step k the weights are version version_base + k.
//
// Devices: the CPU in float32 (Debian's libtorch has no CUDA); parameters, gradients and AdamW
// state are float32.
//
// Thread safety: one thread drives a PolicyTrainer; model() may be read between steps.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/trainer/torch/communicator.h"
#include "workers/trainer/trainer_settings.h"

namespace sluice::trainer {

struct StepReport {
  int64_t step = 0;     // Training steps completed (after this one).
  int64_t version = 0;  // Weight version now held.
  int64_t sequences = 0;
  int64_t tokens = 0;             // Forward tokens of the whole batch (all ranks).
  int64_t trained_tokens = 0;     // Generated (loss-masked) targets of the whole batch.
  int64_t optimizer_updates = 0;  // Minibatch updates applied in this step.
  int64_t policy_passes = 0;      // Policy forwards of a micro-batch on this rank.
  double loss = 0;                // Policy loss summed over minibatches (each a batch mean).
  double value_loss = 0;          // Critic loss (ppo), likewise.
  double reward_mean = 0;         // Mean raw reward of the batch's sequences.
  double advantage_mean = 0;      // Mean token advantage over generated tokens.
  double kl = 0;                  // Mean KL estimate to the reference (klCoef > 0).
  double approx_kl = 0;           // Mean old - new log-prob (policy movement within the step).
  double entropy = 0;             // Mean entropy of the policy over generated tokens.
  double clip_fraction = 0;
  double grad_norm = 0;       // Global gradient norm before clipping, last update.
  double learning_rate = 0;   // Of the last update.
  double staleness_mean = 0;  // Versions behind, over generated tokens.
  double staleness_max = 0;
  double seconds = 0;            // Wall time of Step.
  double tokens_per_second = 0;  // tokens / seconds.
};

struct PolicyTrainerOptions {
  int64_t logprob_chunk = 1024;                // Rows per chunk of the log-prob computation.
  int64_t gradient_bucket_bytes = 25ll << 20;  // All-reduce bucket size.
  // The version of the initial weights: after step k the weights are version_base + k. A job
  // with a warm start begins RL from the warm-started weights, published as version
  // spec.warmStart.steps (warm_start.h).
  int64_t version_base = 0;
  const Clock* clock = nullptr;  // Times each step (StepReport::seconds); null: the system clock.
  // Computes the proximal log-probs in their own pass even where the update pass's serve (to
  // check that both give the same step).
  bool always_separate_proximal_pass = false;
};

// Builds a fresh copy of the Policy's initial weights (called for the policy, the frozen
// reference and the critic).
using ModelLoader = std::function<Result<model::DecoderModel>()>;

class PolicyTrainer {
 public:
  // `comm` must outlive the trainer. InvalidArgument naming the field for unusable settings.
  static Result<std::unique_ptr<PolicyTrainer>> Create(const TrainerSettings& settings,
                                                       const ModelLoader& loader,
                                                       Communicator* comm,
                                                       PolicyTrainerOptions options = {});
  ~PolicyTrainer();

  // One training step (see above). On error the weights may have been partly updated only if
  // the error came from a collective (the gang is then broken anyway); validation errors (bad
  // tokens, lengths) are found before any update.
  Result<StepReport> Step(const dataflow::Batch& batch);

  int64_t step() const { return step_; }
  int64_t version() const { return version_base_ + step_; }
  // From now on the weights are version `version` (and after k more steps version + k): a
  // restarted trainer continuing above a dead run's versions (version_continuity.h).
  void ContinueAt(int64_t version) { version_base_ = version - step_; }
  const model::DecoderModel& model() const { return *model_; }

  // Writes the full training state (weights, AdamW state, critic, step, optimizer-update count,
  // the CPU RNG state) into `dir` (an existing empty directory; see checkpoint_directory.h).
  Status SaveState(const std::string& dir) const;
  // Restores a state written by SaveState for the same settings, including its version (a
  // state.json without one keeps version base + step).
  Status LoadState(const std::string& dir);

 private:
  struct Impl;
  explicit PolicyTrainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  model::DecoderModel* model_ = nullptr;
  int64_t step_ = 0;
  int64_t version_base_ = 0;
};

}  // namespace sluice::trainer
