#include "localcluster/cli/plot_panels.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace sluice::cli {
namespace {

using Getter = std::function<std::optional<double>(const ProgressRow&)>;
using VersionGetter = std::function<std::optional<int64_t>(const ProgressRow&)>;

// The weight version a point of most series belongs to: the TrainerJob's status.version.
std::optional<int64_t> RowVersion(const ProgressRow& row) { return row.version; }

// One series per trainer for `getter`, x from `version`. Rows are samples taken every few
// seconds, so several share one version: the last row with a value wins, which makes each series
// a function of version, drawn in increasing version order.
void AddSeries(PlotPanel& panel, const std::vector<ProgressRow>& rows,
               const std::vector<std::string>& trainers, const std::string& name,
               const Getter& getter, const VersionGetter& version = RowVersion) {
  for (const std::string& trainer : trainers) {
    std::map<int64_t, double> by_version;
    for (const ProgressRow& row : rows) {
      if (row.trainer != trainer) continue;
      const std::optional<int64_t> x = version(row);
      if (!x) continue;
      if (std::optional<double> y = getter(row)) by_version[*x] = *y;
    }
    if (by_version.empty()) continue;
    PlotSeries series;
    series.name = trainers.size() > 1 ? trainer + " " + name : name;
    for (const auto& [x, y] : by_version) series.points.emplace_back(static_cast<double>(x), y);
    panel.series.push_back(std::move(series));
  }
}

template <typename T>
std::optional<double> AsDouble(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

}  // namespace

std::vector<PlotPanel> BuildPanels(const std::vector<ProgressRow>& rows) {
  std::vector<std::string> trainers;
  for (const ProgressRow& row : rows) {
    if (std::find(trainers.begin(), trainers.end(), row.trainer) == trainers.end()) {
      trainers.push_back(row.trainer);
    }
  }
  std::vector<PlotPanel> panels(4);
  panels[0].title = "Reward and eval accuracy";
  panels[0].y_label = "reward / accuracy";
  AddSeries(panels[0], rows, trainers, "reward mean",
            [](const ProgressRow& r) { return r.reward_mean; });
  // Eval accuracy belongs to the version that was evaluated, which lags the trainer's version.
  AddSeries(
      panels[0], rows, trainers, "eval accuracy",
      [](const ProgressRow& r) { return r.eval_accuracy; },
      [](const ProgressRow& r) { return r.eval_version; });

  panels[1].title = "Throughput (tokens/s)";
  panels[1].y_label = "tokens/s";
  AddSeries(panels[1], rows, trainers, "rollout",
            [](const ProgressRow& r) { return r.rollout_tokens_per_second; });
  AddSeries(panels[1], rows, trainers, "training",
            [](const ProgressRow& r) { return r.train_tokens_per_second; });

  panels[2].title = "Replicas per region";
  panels[2].y_label = "replicas";
  std::set<std::string> regions;
  for (const ProgressRow& row : rows) {
    for (const auto& entry : row.region_replicas) regions.insert(entry.first);
  }
  for (const std::string& region : regions) {
    AddSeries(panels[2], rows, trainers, region,
              [&region](const ProgressRow& r) -> std::optional<double> {
                auto it = r.region_replicas.find(region);
                if (it == r.region_replicas.end()) return std::nullopt;
                return static_cast<double>(it->second);
              });
  }
  if (regions.empty()) {
    AddSeries(panels[2], rows, trainers, "total",
              [](const ProgressRow& r) { return AsDouble(r.replicas_total); });
  }

  panels[3].title = "Staleness mean";
  panels[3].y_label = "versions";
  AddSeries(panels[3], rows, trainers, "staleness",
            [](const ProgressRow& r) { return r.staleness_mean; });
  return panels;
}

}  // namespace sluice::cli
