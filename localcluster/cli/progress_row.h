// ProgressRow: one sample of one TrainerJob of an experiment, joined with what its Dataflow and
// RolloutPools reported at the same moment. `sluice run` renders it (progress_render.h) and
// appends it as one JSON line to DIR/experiments/<name>/progress.jsonl (progress_log.h);
// `sluice plot` reads the lines back.
//
// The JSON line (keys absent when the value is unknown, so old readers skip new keys):
//   {"t": 1700000000.25,                             wall time, seconds since the Unix epoch
//    "trainer": "tiny-grpo", "phase": "Running",
//    "step": 12, "steps": 200, "version": 12,        TrainerJob status.step, spec.steps,
//                                                    status.version
//    "rewardMean": 0.41, "loss": 0.12, "stalenessMean": 0.8,
//    "trainTokensPerSecond": 1200,                   TrainerJob status.lastMetrics.*
//    "dataWaitShare": 0.12,                          TrainerJob status.lastMetrics.dataWaitFraction
//    "buffered": 64, "trajectoriesPerSecond": 30.5,  Dataflow status.*
//    "evalAccuracy": 0.38, "evalVersion": 10,        Dataflow status.evaluation.*
//    "rolloutTokensPerSecond": 5230,                 sum of RolloutPool status.tokensPerSecond
//    "replicasTotal": 3, "readyTotal": 3,            sum of status.replicas / readyReplicas
//    "replicas": {"local-us-east": 2},               per status.regions[].name
//    "ready": {"local-us-east": 2}}
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"

namespace sluice::cli {

struct ProgressRow {
  double t = 0;  // Seconds since the Unix epoch (wall clock).
  std::string trainer;
  std::string phase;  // "" when the TrainerJob has no status.phase yet.
  std::optional<int64_t> step;
  std::optional<int64_t> steps;  // spec.steps: the goal.
  std::optional<int64_t> version;
  std::optional<double> reward_mean;
  std::optional<double> loss;
  std::optional<double> staleness_mean;
  std::optional<double> train_tokens_per_second;
  std::optional<double> data_wait_share;  // Of the last step's time spent waiting for a batch, 0-1.
  std::optional<int64_t> buffered;
  std::optional<double> trajectories_per_second;
  std::optional<double> eval_accuracy;
  std::optional<int64_t> eval_version;
  std::optional<double> rollout_tokens_per_second;
  std::optional<int64_t> replicas_total;
  std::optional<int64_t> ready_total;
  std::map<std::string, int64_t> region_replicas;  // Region name -> replicas.
  std::map<std::string, int64_t> region_ready;     // Region name -> ready replicas.

  bool operator==(const ProgressRow&) const = default;
};

nlohmann::json ProgressRowToJson(const ProgressRow& row);

// The inverse of ProgressRowToJson. InvalidArgument when `j` is not an object, or "t" is not a
// number, or a known key has the wrong type; unknown keys are ignored.
Result<ProgressRow> ProgressRowFromJson(const nlohmann::json& j);

}  // namespace sluice::cli
