// The four panels `sluice plot` draws from an experiment's progress rows, as plain series of
// (x, y) points; both renderers (svg_plot.h, gnuplot.h) draw these. Pure.
//
//   (a) "Reward and eval accuracy"   reward mean (rewardMean), eval accuracy (evalAccuracy)
//   (b) "Throughput (tokens/s)"      rollout (rolloutTokensPerSecond), training
//                                    (trainTokensPerSecond)
//   (c) "Replicas per region"        one series per region name (replicas), sorted by name; the
//                                    total (replicasTotal) when no row has regions
//   (d) "Staleness mean"             staleness (stalenessMean)
//
// x is the weight version: the row's TrainerJob status.version (`version`), except for eval
// accuracy, whose x is the version that eval round scored (`eval_version`). A row without that
// version or without a value adds no point; when several rows of one trainer share a version,
// the last of them with a value gives the point, so each series has at most one point per version,
// in increasing version order. A series without any point is left out. With rows of more than one
// TrainerJob every series name is prefixed with the TrainerJob's name ("tiny-grpo reward mean").
//
// Thread safety: pure functions and values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (version, y), by increasing version.
};

struct PlotPanel {
  std::string title;
  std::string y_label;
  std::vector<PlotSeries> series;
};

// Always four panels, in the order above (a panel may have no series).
std::vector<PlotPanel> BuildPanels(const std::vector<ProgressRow>& rows);

}  // namespace sluice::cli
