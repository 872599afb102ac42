// DataflowCore's evaluation rounds: the fixed subset of rows every round covers, queueing a
// round's eval tasks, and scoring a round (avg@k, pass@k, the episode figures) into the status's
// "last_eval" once all its tasks are submitted or set aside (dataflow_core.h, "Versions").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/splitmix64.h"
#include "workers/dataflow/algorithms/eval_episodes.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"

namespace sluice::dataflow {

using nlohmann::json;

std::vector<size_t> EvalRowSubset(size_t eval_size, int64_t samples, uint64_t seed) {
  std::vector<size_t> rows(eval_size);
  std::iota(rows.begin(), rows.end(), size_t{0});
  if (samples <= 0 || static_cast<size_t>(samples) >= eval_size) return rows;
  const uint64_t key = SplitMix64(seed ^ 0x6576616c5f726f77ULL);  // "eval_row"
  for (size_t i = eval_size - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(SplitMix64(key + i) % (i + 1));
    std::swap(rows[i], rows[j]);
  }
  rows.resize(static_cast<size_t>(samples));
  std::sort(rows.begin(), rows.end());
  return rows;
}

void DataflowCore::QueueEvalRoundLocked(const PolicyState& policy, int64_t version) {
  if (eval_rows_.empty()) return;
  auto round = std::make_unique<EvalRound>();
  round->id = ++counters_->next_round;
  round->policy = policy.name;
  round->version = version;
  round->outstanding = static_cast<int64_t>(eval_rows_.size());
  for (size_t row : eval_rows_) {
    auto t = std::make_unique<Task>();
    t->id = "task-" + std::to_string(++counters_->next_task);
    t->eval = true;
    t->row = row;
    t->eval_round = round->id;
    eval_pending_.push_back(t->id);
    tasks_.emplace(t->id, std::move(t));
  }
  eval_rounds_.emplace(round->id, std::move(round));
}

void DataflowCore::FinishEvalTaskLocked(int64_t round_id, const std::optional<EvalItem>& item) {
  auto it = eval_rounds_.find(round_id);
  if (it == eval_rounds_.end()) return;  // A late result of a round already scored.
  EvalRound& round = *it->second;
  if (item) {
    round.items.push_back(*item);
  } else {
    ++round.failed;
  }
  if (--round.outstanding > 0) return;
  json report = {{"round", round.id},
                 {"policy", round.policy},
                 {"version", round.version},
                 {"k", config_.eval.k},
                 {"failed_tasks", round.failed}};
  Result<EvalReport> r = AggregateEval(round.items, config_.eval.k);
  if (!r.ok()) {
    report["error"] = r.status().ToString();
  } else {
    report["overall_avg_at_k"] = r->overall_avg_at_k;
    report["overall_pass_at_k"] = r->overall_pass_at_k;
    report["overall_mean_reward"] = r->overall_mean_reward;
    json datasets = json::array();
    for (const DatasetEvalMetrics& d : r->datasets) {
      datasets.push_back({{"dataset", d.dataset},
                          {"prompts", d.prompts},
                          {"incomplete_prompts", d.incomplete_prompts},
                          {"completions", d.completions},
                          {"correct", d.correct},
                          {"avg_at_k", d.avg_at_k},
                          {"pass_at_k", d.pass_at_k},
                          {"mean_reward", d.mean_reward}});
    }
    report["datasets"] = std::move(datasets);
    AddEvalEpisodeFigures(r->episodes, &report);
  }
  last_eval_ = std::move(report);
  ++counters_->evals_completed;
  eval_rounds_.erase(it);
}

}  // namespace sluice::dataflow
