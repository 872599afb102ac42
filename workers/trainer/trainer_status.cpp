#include "workers/trainer/trainer_status.h"

#include <utility>

namespace sluice::trainer {

TrainerStatusBoard::TrainerStatusBoard(metrics::Registry* registry, std::string policy, int rank)
    : policy_(std::move(policy)), rank_(rank) {
  if (registry == nullptr) return;
  const std::vector<std::string> labels{"policy"};
  const std::vector<std::string> values{policy_};
  auto gauge = [&](const char* name, const char* help) {
    return &registry->AddGauge(name, help, labels).WithLabels(values);
  };
  auto counter = [&](const char* name, const char* help) {
    return &registry->AddCounter(name, help, labels).WithLabels(values);
  };
  step_gauge_ = gauge("sluice_trainer_step", "Training steps completed.");
  version_gauge_ =
      gauge("sluice_trainer_version", "Weight version held (and published by rank 0).");
  loss_ = gauge("sluice_trainer_loss", "Policy loss of the last step.");
  value_loss_ = gauge("sluice_trainer_value_loss", "Critic loss of the last step (ppo).");
  reward_ = gauge("sluice_trainer_reward_mean", "Mean reward of the last step's batch.");
  kl_ = gauge("sluice_trainer_kl", "Mean KL estimate to the reference weights, last step.");
  entropy_ =
      gauge("sluice_trainer_entropy", "Mean policy entropy over generated tokens, last step.");
  clip_ = gauge("sluice_trainer_clip_fraction",
                "Fraction of generated tokens whose ratio was clipped.");
  grad_norm_ =
      gauge("sluice_trainer_grad_norm", "Global gradient norm before clipping, last update.");
  lr_ = gauge("sluice_trainer_learning_rate", "Learning rate of the last update.");
  tps_ = gauge("sluice_trainer_tokens_per_second", "Forward tokens per second of the last step.");
  wait_fraction_ = gauge("sluice_trainer_data_wait_fraction",
                         "Fraction of the last step's wall time spent waiting for its batch.");
  staleness_mean_ = gauge("sluice_trainer_staleness_mean",
                          "Mean versions behind of the last batch's generated tokens.");
  staleness_max_ = gauge("sluice_trainer_staleness_max",
                         "Most versions behind of the last batch's generated tokens.");
  publish_seconds_ = gauge("sluice_trainer_publish_seconds",
                           "Seconds to build and store the last published version.");
  delta_bytes_ = gauge("sluice_trainer_delta_bytes", "Bytes of the last version's delta.");
  delta_density_ = gauge("sluice_trainer_delta_density",
                         "Changed elements / all elements in the last version's delta.");
  checkpoint_step_ = gauge("sluice_trainer_checkpoint_step", "Step of the newest checkpoint.");
  steps_total_ = counter("sluice_trainer_steps_total", "Training steps completed by this process.");
  tokens_total_ =
      counter("sluice_trainer_tokens_total", "Forward tokens trained on by this process.");
  wait_seconds_total_ = counter("sluice_trainer_data_wait_seconds_total",
                                "Seconds spent waiting for batches from the dataflow.");
}

void TrainerStatusBoard::SetPhase(const std::string& phase, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
  message_ = message;
}

void TrainerStatusBoard::SetReady(bool ready) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = ready;
}

bool TrainerStatusBoard::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

void TrainerStatusBoard::SetStart(int64_t step, int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = step;
  version_ = version;
  if (step_gauge_) {
    step_gauge_->Set(static_cast<double>(step));
    version_gauge_->Set(static_cast<double>(version));
  }
}

void TrainerStatusBoard::RecordStep(const StepFigures& f) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = f.step;
  version_ = f.version;
  last_ = f;
  if (step_gauge_ == nullptr) return;
  step_gauge_->Set(static_cast<double>(f.step));
  version_gauge_->Set(static_cast<double>(f.version));
  loss_->Set(f.loss);
  value_loss_->Set(f.value_loss);
  reward_->Set(f.reward_mean);
  kl_->Set(f.kl);
  entropy_->Set(f.entropy);
  clip_->Set(f.clip_fraction);
  grad_norm_->Set(f.grad_norm);
  lr_->Set(f.learning_rate);
  tps_->Set(f.tokens_per_second);
  wait_fraction_->Set(f.data_wait_fraction);
  staleness_mean_->Set(f.staleness_mean);
  staleness_max_->Set(f.staleness_max);
  publish_seconds_->Set(f.publish_seconds);
  delta_bytes_->Set(f.delta_bytes);
  delta_density_->Set(f.delta_density);
  steps_total_->Inc();
  tokens_total_->Inc(static_cast<double>(f.tokens));
}

void TrainerStatusBoard::RecordCheckpoint(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  last_checkpoint_ = step;
  if (checkpoint_step_) checkpoint_step_->Set(static_cast<double>(step));
}

void TrainerStatusBoard::RecordCheckpointFallback(int64_t step, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  skipped_checkpoints_.push_back({{"step", step}, {"reason", reason}});
}

void TrainerStatusBoard::RecordDataWait(double seconds) {
  if (wait_seconds_total_) wait_seconds_total_->Inc(seconds);
}

nlohmann::json TrainerStatusBoard::StatusJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json metrics = nlohmann::json::object();
  if (last_) {
    metrics = {{"loss", last_->loss},
               {"rewardMean", last_->reward_mean},
               {"kl", last_->kl},
               {"entropy", last_->entropy},
               {"tokensPerSecond", last_->tokens_per_second},
               {"stalenessMean", last_->staleness_mean},
               {"dataWaitFraction", last_->data_wait_fraction},
               {"clipFraction", last_->clip_fraction},
               {"gradNorm", last_->grad_norm},
               {"learningRate", last_->learning_rate}};
  }
  nlohmann::json out = {{"phase", phase_}, {"step", step_},     {"version", version_},
                        {"rank", rank_},   {"policy", policy_}, {"metrics", metrics}};
  if (last_checkpoint_) out["lastCheckpointStep"] = *last_checkpoint_;
  if (!skipped_checkpoints_.empty()) out["skippedCheckpoints"] = skipped_checkpoints_;
  if (!message_.empty()) out["message"] = message_;
  return out;
}

}  // namespace sluice::trainer
