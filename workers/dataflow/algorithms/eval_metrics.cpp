#include "workers/dataflow/algorithms/eval_metrics.h"

#include <cmath>
#include <map>

namespace sluice::dataflow {

Result<double> PassAtK(int64_t n, int64_t c, int64_t k) {
  if (n < 1) return Status::InvalidArgument("must be >= 1", "n");
  if (c < 0 || c > n) return Status::InvalidArgument("must be in [0, n]", "c");
  if (k < 1 || k > n) return Status::InvalidArgument("must be in [1, n]", "k");
  if (n - c < k) return 1.0;
  double all_wrong = 1.0;  // C(n−c, k) / C(n, k)
  for (int64_t i = n - c + 1; i <= n; ++i) {
    all_wrong *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  }
  return 1.0 - all_wrong;
}

Result<EvalReport> AggregateEval(std::span<const EvalItem> items, int64_t k) {
  if (k < 1) return Status::InvalidArgument("must be >= 1", "k");
  struct Acc {
    DatasetEvalMetrics m;
    double reward_sum = 0.0;
    double pass_sum = 0.0;
    int64_t pass_prompts = 0;
  };
  std::map<std::string, Acc> by_dataset;
  std::vector<EvalEpisode> episodes;
  for (const EvalItem& item : items) {
    if (!item.correct.empty() && item.correct.size() != item.rewards.size()) {
      return Status::InvalidArgument("prompt '" + item.prompt_id + "': length differs from rewards",
                                     "correct");
    }
    if (!item.episodes.empty() && item.episodes.size() != item.rewards.size()) {
      return Status::InvalidArgument("prompt '" + item.prompt_id + "': length differs from rewards",
                                     "episodes");
    }
    episodes.insert(episodes.end(), item.episodes.begin(), item.episodes.end());
    Acc& acc = by_dataset[item.dataset];
    acc.m.dataset = item.dataset;
    ++acc.m.prompts;
    int64_t c = 0;
    for (size_t i = 0; i < item.rewards.size(); ++i) {
      const double r = item.rewards[i];
      if (!std::isfinite(r)) {
        return Status::InvalidArgument("prompt '" + item.prompt_id + "': reward is not finite",
                                       "rewards");
      }
      acc.reward_sum += r;
      const bool ok = item.correct.empty() ? r > 0.0 : item.correct[i] != 0;
      if (ok) ++c;
    }
    const auto n = static_cast<int64_t>(item.rewards.size());
    acc.m.completions += n;
    acc.m.correct += c;
    if (n < k) {
      ++acc.m.incomplete_prompts;
      continue;
    }
    auto pass = PassAtK(n, c, k);
    if (!pass.ok()) return pass.status();
    acc.pass_sum += *pass;
    ++acc.pass_prompts;
  }
  EvalReport report;
  report.k = k;
  for (auto& [name, acc] : by_dataset) {
    DatasetEvalMetrics m = acc.m;
    if (m.completions > 0) {
      m.avg_at_k = static_cast<double>(m.correct) / static_cast<double>(m.completions);
      m.mean_reward = acc.reward_sum / static_cast<double>(m.completions);
    }
    if (acc.pass_prompts > 0) m.pass_at_k = acc.pass_sum / static_cast<double>(acc.pass_prompts);
    report.overall_avg_at_k += m.avg_at_k;
    report.overall_pass_at_k += m.pass_at_k;
    report.overall_mean_reward += m.mean_reward;
    report.datasets.push_back(std::move(m));
  }
  if (!report.datasets.empty()) {
    const auto d = static_cast<double>(report.datasets.size());
    report.overall_avg_at_k /= d;
    report.overall_pass_at_k /= d;
    report.overall_mean_reward /= d;
  }
  report.episodes = AggregateEvalEpisodes(episodes);
  return report;
}

}  // namespace sluice::dataflow
