#include "localcluster/cli/experiment_status.h"

#include <utility>

#include "common/json/fields.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

template <typename T>
void Add(std::optional<T>& sum, const std::optional<T>& value) {
  if (value) sum = sum.value_or(T{}) + *value;
}

}  // namespace

TrainerView TrainerViewOf(const json& trainerjob) {
  TrainerView v;
  v.name = StringAt(trainerjob, "/metadata/name");
  v.dataflow = StringAt(trainerjob, "/spec/dataflowRef/name");
  v.phase = StringAt(trainerjob, "/status/phase");
  v.step = OptionalIntAt(trainerjob, "/status/step");
  v.steps = OptionalIntAt(trainerjob, "/spec/steps");
  v.version = OptionalIntAt(trainerjob, "/status/version");
  v.reward_mean = OptionalNumberAt(trainerjob, "/status/lastMetrics/rewardMean");
  v.loss = OptionalNumberAt(trainerjob, "/status/lastMetrics/loss");
  v.staleness_mean = OptionalNumberAt(trainerjob, "/status/lastMetrics/stalenessMean");
  v.tokens_per_second = OptionalNumberAt(trainerjob, "/status/lastMetrics/tokensPerSecond");
  v.data_wait_fraction = OptionalNumberAt(trainerjob, "/status/lastMetrics/dataWaitFraction");
  return v;
}

DataflowView DataflowViewOf(const json& dataflow) {
  DataflowView v;
  v.name = StringAt(dataflow, "/metadata/name");
  v.workflow = StringAt(dataflow, "/spec/workflow/type");
  v.buffered = OptionalIntAt(dataflow, "/status/buffered");
  v.trajectories_per_second = OptionalNumberAt(dataflow, "/status/trajectoriesPerSecond");
  v.eval_version = OptionalIntAt(dataflow, "/status/evaluation/version");
  v.eval_accuracy = OptionalNumberAt(dataflow, "/status/evaluation/accuracy");
  v.eval_tool_call_share = OptionalNumberAt(dataflow, "/status/evaluation/toolCallShare");
  if (const json* policies = ValueAt(dataflow, "/status/evaluation/policies");
      policies != nullptr && policies->is_array()) {
    for (const json& p : *policies) {
      EvalPolicyView policy;
      policy.name = StringAt(p, "/name");
      const std::optional<double> mean = OptionalNumberAt(p, "/meanReward");
      if (policy.name.empty() || !mean) continue;
      policy.mean_reward = *mean;
      policy.mean_reward_when_correct = OptionalNumberAt(p, "/meanRewardWhenCorrect");
      policy.mean_reward_when_wrong = OptionalNumberAt(p, "/meanRewardWhenWrong");
      v.eval_policies.push_back(std::move(policy));
    }
  }
  return v;
}

PoolView PoolViewOf(const json& rolloutpool) {
  PoolView v;
  v.name = StringAt(rolloutpool, "/metadata/name");
  v.dataflow = StringAt(rolloutpool, "/spec/dataflowRef/name");
  v.replicas = OptionalIntAt(rolloutpool, "/status/replicas");
  v.ready = OptionalIntAt(rolloutpool, "/status/readyReplicas");
  v.tokens_per_second = OptionalNumberAt(rolloutpool, "/status/tokensPerSecond");
  if (const json* regions = ValueAt(rolloutpool, "/status/regions");
      regions != nullptr && regions->is_array()) {
    for (const json& r : *regions) {
      RegionView region;
      region.name = StringAt(r, "/name");
      if (region.name.empty()) continue;
      region.replicas = OptionalIntAt(r, "/replicas");
      region.ready = OptionalIntAt(r, "/ready");
      v.regions.push_back(std::move(region));
    }
  }
  return v;
}

std::vector<ProgressRow> JoinProgress(const ExperimentView& view, double t) {
  std::vector<ProgressRow> rows;
  for (const TrainerView& trainer : view.trainers) {
    ProgressRow row;
    row.t = t;
    row.trainer = trainer.name;
    row.phase = trainer.phase;
    row.step = trainer.step;
    row.steps = trainer.steps;
    row.version = trainer.version;
    row.reward_mean = trainer.reward_mean;
    row.loss = trainer.loss;
    row.staleness_mean = trainer.staleness_mean;
    row.train_tokens_per_second = trainer.tokens_per_second;
    row.data_wait_share = trainer.data_wait_fraction;

    const DataflowView* dataflow = nullptr;
    for (const DataflowView& d : view.dataflows) {
      if (!trainer.dataflow.empty() && d.name == trainer.dataflow) dataflow = &d;
    }
    if (dataflow == nullptr && view.dataflows.size() == 1) dataflow = &view.dataflows[0];
    if (dataflow != nullptr) {
      row.buffered = dataflow->buffered;
      row.trajectories_per_second = dataflow->trajectories_per_second;
      row.eval_accuracy = dataflow->eval_accuracy;
      row.eval_version = dataflow->eval_version;
    }

    std::vector<const PoolView*> pools;
    const std::string dataflow_name = dataflow != nullptr ? dataflow->name : trainer.dataflow;
    for (const PoolView& p : view.pools) {
      if (!dataflow_name.empty() && p.dataflow == dataflow_name) pools.push_back(&p);
    }
    if (pools.empty()) {
      for (const PoolView& p : view.pools) pools.push_back(&p);
    }
    for (const PoolView* p : pools) {
      Add(row.rollout_tokens_per_second, p->tokens_per_second);
      Add(row.replicas_total, p->replicas);
      Add(row.ready_total, p->ready);
      for (const RegionView& region : p->regions) {
        if (region.replicas) row.region_replicas[region.name] += *region.replicas;
        if (region.ready) row.region_ready[region.name] += *region.ready;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace sluice::cli
