// TrainerStatusBoard: what a trainer rank reports about itself, to the operator (GET /v1/status,
// the worker contract in operator/controllers/trainerjob/desired_pods.h) and to Prometheus
// (sluice_trainer_* on /metrics). The training loop writes it after every step; HTTP handlers
// read it.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/metrics/registry.h"

namespace sluice::trainer {

// The figures of one completed step (units in the field names' comments).
struct StepFigures {
  int64_t step = 0;
  int64_t version = 0;
  double loss = 0;
  double value_loss = 0;
  double reward_mean = 0;
  double kl = 0;
  double entropy = 0;
  double clip_fraction = 0;
  double grad_norm = 0;
  double learning_rate = 0;
  double tokens_per_second = 0;  // Forward tokens per second of step time.
  double staleness_mean = 0;     // Versions.
  double staleness_max = 0;
  double data_wait_fraction = 0;  // Of this step's wall time spent waiting for the batch.
  double step_seconds = 0;
  double publish_seconds = 0;  // Building and storing the new version (rank 0).
  double delta_bytes = 0;      // Of the new version's delta; 0 when none.
  double delta_density = 0;    // Changed elements / all elements.
  int64_t tokens = 0;          // Forward tokens of the step's batch.
};

class TrainerStatusBoard {
 public:
  // Registers the sluice_trainer_* families on `registry` (may be null: no metrics).
  TrainerStatusBoard(metrics::Registry* registry, std::string policy, int rank);

  // "Initializing", "Running", "Succeeded", "Failed", or "Starved" (the dataflow can never feed
  // the policy again before the last step); `message` says why (empty: none), and is replaced by
  // the next SetPhase.
  void SetPhase(const std::string& phase, const std::string& message = "");
  void SetReady(bool ready);
  // The weights and step the rank starts from (0, or a resumed checkpoint).
  void SetStart(int64_t step, int64_t version);
  void RecordStep(const StepFigures& figures);
  void RecordCheckpoint(int64_t step);
  // A checkpoint the resume skipped as damaged (`reason` says how), newest first.
  void RecordCheckpointFallback(int64_t step, const std::string& reason);
  void RecordDataWait(double seconds);

  bool ready() const;
  // {"phase", "step", "version", "rank", "policy", "metrics": {loss, rewardMean, kl, entropy,
  // tokensPerSecond, stalenessMean, dataWaitFraction, clipFraction, gradNorm, learningRate},
  // "lastCheckpointStep" (absent before the first), "skippedCheckpoints": [{"step", "reason"}]
  // (absent when the resume skipped none), "message" (absent when empty)}.
  nlohmann::json StatusJson() const;

 private:
  mutable std::mutex mu_;
  std::string policy_;
  int rank_;
  std::string phase_ = "Initializing";
  std::string message_;
  bool ready_ = false;
  int64_t step_ = 0;
  int64_t version_ = 0;
  std::optional<StepFigures> last_;
  std::optional<int64_t> last_checkpoint_;
  nlohmann::json skipped_checkpoints_ = nlohmann::json::array();

  metrics::Gauge* step_gauge_ = nullptr;
  metrics::Gauge* version_gauge_ = nullptr;
  metrics::Gauge* loss_ = nullptr;
  metrics::Gauge* value_loss_ = nullptr;
  metrics::Gauge* reward_ = nullptr;
  metrics::Gauge* kl_ = nullptr;
  metrics::Gauge* entropy_ = nullptr;
  metrics::Gauge* clip_ = nullptr;
  metrics::Gauge* grad_norm_ = nullptr;
  metrics::Gauge* lr_ = nullptr;
  metrics::Gauge* tps_ = nullptr;
  metrics::Gauge* wait_fraction_ = nullptr;
  metrics::Gauge* staleness_mean_ = nullptr;
  metrics::Gauge* staleness_max_ = nullptr;
  metrics::Gauge* publish_seconds_ = nullptr;
  metrics::Gauge* delta_bytes_ = nullptr;
  metrics::Gauge* delta_density_ = nullptr;
  metrics::Counter* steps_total_ = nullptr;
  metrics::Counter* tokens_total_ = nullptr;
  metrics::Counter* wait_seconds_total_ = nullptr;
  metrics::Gauge* checkpoint_step_ = nullptr;
};

}  // namespace sluice::trainer
