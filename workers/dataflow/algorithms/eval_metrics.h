// Evaluation metrics: avg@k and the unbiased pass@k estimator, per dataset and overall.
//
// For one eval prompt with n completions of which c are correct:
//   avg@k  contribution: c correct out of n
//   pass@k = 1 − C(n−c, k) / C(n, k)       (Chen et al. 2021, unbiased for k <= n)
//          = 1                              when n − c < k (every k-subset holds a correct one)
//          = 1 − Π_{i=n−c+1}^{n} (1 − k/i)  otherwise; the product form never forms a
//                                           binomial coefficient, so it cannot overflow.
// Per dataset: avg@k = Σc / Σn over its prompts; pass@k = mean of the prompts' pass@k (prompts
// with fewer than k completions, e.g. lost results, are left out of pass@k and counted as
// incomplete); mean_reward = mean over all completions. Overall = unweighted mean over datasets
// (as the reference does). All metrics are fractions in [0, 1] (the reference prints percent).
// A completion is correct when its `correct` flag says so or, with no flags, when reward > 0.
// DataflowCore always sets the flags: correct = the full reward (>= 1 − 1e-9), so partial credit
// counts in mean_reward but not in avg@k or pass@k.
// The report also holds the episode figures of eval_episodes.h (other policies' rewards, the
// tool-call share) over every item's `episodes`.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/dataflow/algorithms/eval_episodes.h"

namespace sluice::dataflow {

// InvalidArgument unless n >= 1, 0 <= c <= n and 1 <= k <= n.
Result<double> PassAtK(int64_t n, int64_t c, int64_t k);

// The completions of one eval prompt.
struct EvalItem {
  std::string dataset;
  std::string prompt_id;
  std::vector<double> rewards;             // One per completion; finite.
  std::vector<uint8_t> correct;            // Empty (use reward > 0) or one flag per completion.
  std::vector<EvalEpisode> episodes = {};  // Empty or one per completion (eval_episodes.h).
};

struct DatasetEvalMetrics {
  std::string dataset;
  int64_t prompts = 0;
  int64_t incomplete_prompts = 0;  // Fewer than k completions: not in pass@k.
  int64_t completions = 0;
  int64_t correct = 0;
  double avg_at_k = 0.0;
  double pass_at_k = 0.0;
  double mean_reward = 0.0;
};

struct EvalReport {
  int64_t k = 1;
  std::vector<DatasetEvalMetrics> datasets;  // Sorted by name.
  double overall_avg_at_k = 0.0;
  double overall_pass_at_k = 0.0;
  double overall_mean_reward = 0.0;
  EvalEpisodeFigures episodes = {};  // Over every item's episodes.
};

// Aggregates items for k = evaluation.repeat. InvalidArgument for k < 1, a non-finite reward,
// or `correct` or `episodes` of the wrong length. Items with no completions are counted as
// incomplete prompts. A dataset none of whose prompts has k completions has pass@k 0.
Result<EvalReport> AggregateEval(std::span<const EvalItem> items, int64_t k);

}  // namespace sluice::dataflow
