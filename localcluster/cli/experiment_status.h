// What `sluice run` reads of an experiment's objects while following, as plain views, and the
// per-TrainerJob ProgressRow joined from them. Pure: the objects come in as JSON.
//
// Fields read (a missing or mistyped one stays unknown, rendered "-"):
//   TrainerJob   metadata.name, spec.steps, spec.dataflowRef.name, status.phase, status.step,
//                status.version, status.lastMetrics.{rewardMean, loss, stalenessMean,
//                tokensPerSecond, dataWaitFraction}
//   Dataflow     metadata.name, spec.workflow.type, status.buffered, status.trajectoriesPerSecond,
//                status.evaluation.{version, accuracy, toolCallShare,
//                policies[].{name, meanReward, meanRewardWhenCorrect, meanRewardWhenWrong}}
//                (a policies[] entry without a name or a numeric meanReward is skipped)
//   RolloutPool  metadata.name, spec.dataflowRef.name, status.replicas, status.readyReplicas,
//                status.tokensPerSecond, status.regions[].{name, replicas, ready}
//
// Joining: a TrainerJob's Dataflow is the one named by its spec.dataflowRef (else the only
// Dataflow of the experiment); its RolloutPools are those whose spec.dataflowRef names that
// Dataflow (else, when none does, every pool of the experiment). Rollout tokens/s, replica
// totals and per-region counts are summed over those pools.
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

struct TrainerView {
  std::string name;
  std::string dataflow;  // spec.dataflowRef.name; "" when unset.
  std::string phase;
  std::optional<int64_t> step;
  std::optional<int64_t> steps;
  std::optional<int64_t> version;
  std::optional<double> reward_mean;
  std::optional<double> loss;
  std::optional<double> staleness_mean;
  std::optional<double> tokens_per_second;
  std::optional<double> data_wait_fraction;  // Of the last step's time spent waiting for a batch.
};

// One entry of status.evaluation.policies: a non-primary policy's rewards in the round (in
// solve-and-verify, the verifier's agreement overall, on correct and on wrong answers).
struct EvalPolicyView {
  std::string name;
  double mean_reward = 0;
  std::optional<double> mean_reward_when_correct = std::nullopt;  // Absent: no correct answer.
  std::optional<double> mean_reward_when_wrong = std::nullopt;    // Absent: no wrong answer.

  bool operator==(const EvalPolicyView&) const = default;
};

struct DataflowView {
  std::string name;
  std::string workflow;  // spec.workflow.type ("single-turn", "solve-and-verify", ...); "" unset.
  std::optional<int64_t> buffered;
  std::optional<double> trajectories_per_second;
  std::optional<int64_t> eval_version;
  std::optional<double> eval_accuracy;
  std::optional<double> eval_tool_call_share;  // Share 0-1; workflows with tools only.
  std::vector<EvalPolicyView> eval_policies;   // In status order.
};

struct RegionView {
  std::string name;
  std::optional<int64_t> replicas;
  std::optional<int64_t> ready;
};

struct PoolView {
  std::string name;
  std::string dataflow;  // spec.dataflowRef.name; "" when unset.
  std::optional<int64_t> replicas;
  std::optional<int64_t> ready;
  std::optional<double> tokens_per_second;
  std::vector<RegionView> regions;  // In status order.
};

struct ExperimentView {
  std::vector<TrainerView> trainers;
  std::vector<DataflowView> dataflows;
  std::vector<PoolView> pools;
};

TrainerView TrainerViewOf(const nlohmann::json& trainerjob);
DataflowView DataflowViewOf(const nlohmann::json& dataflow);
PoolView PoolViewOf(const nlohmann::json& rolloutpool);

// One row per TrainerJob of `view`, in order, stamped with `t` (seconds since the epoch).
std::vector<ProgressRow> JoinProgress(const ExperimentView& view, double t);

}  // namespace sluice::cli
