#include "localcluster/cli/progress_render.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "localcluster/cli/status_report.h"

namespace sluice::cli {

std::string FormatNumber(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "-";
  char buf[64];
  if (std::fabs(*value) >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f", *value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", *value);
  }
  return buf;
}

std::string FormatInt(std::optional<int64_t> value) { return value ? std::to_string(*value) : "-"; }

std::string FormatStepProgress(std::optional<int64_t> step, std::optional<int64_t> steps) {
  return FormatInt(step) + "/" + FormatInt(steps);
}

std::string FormatShare(std::optional<double> share) {
  if (!share || !std::isfinite(*share)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f%%", *share * 100);
  return buf;
}

std::string ClockText(double t) {
  const std::time_t seconds = static_cast<std::time_t>(std::floor(t));
  std::tm local{};
  localtime_r(&seconds, &local);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &local);
  return buf;
}

std::string PlainLine(const ProgressRow& row, const std::string& clock) {
  std::string line = clock + " " + row.trainer + " " + (row.phase.empty() ? "-" : row.phase);
  line += " step " + FormatStepProgress(row.step, row.steps);
  line += " v" + FormatInt(row.version);
  line += " reward " + FormatNumber(row.reward_mean);
  line += " loss " + FormatNumber(row.loss);
  line += " eval " + FormatNumber(row.eval_accuracy);
  line += " rollout " + FormatNumber(row.rollout_tokens_per_second) + " tok/s";
  line += " train " + FormatNumber(row.train_tokens_per_second) + " tok/s";
  line += " wait " + FormatShare(row.data_wait_share);
  line += " buffer " + FormatInt(row.buffered);
  line += " staleness " + FormatNumber(row.staleness_mean);
  line += " replicas";
  if (row.region_replicas.empty()) {
    line += " " + FormatInt(row.replicas_total);
  } else {
    for (const auto& [region, replicas] : row.region_replicas) {
      line += " " + region + "=" + std::to_string(replicas);
    }
  }
  return line;
}

std::string LiveView(const std::string& experiment, const std::string& clock,
                     double interval_seconds, const ExperimentView& view) {
  std::string out = "sluice run " + experiment + "  " + clock + "  every " +
                    FormatNumber(interval_seconds) +
                    " s; Ctrl-C stops following (the resources stay)\n";
  if (!view.trainers.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const TrainerView& t : view.trainers) {
      rows.push_back({t.name, t.phase.empty() ? "-" : t.phase, FormatStepProgress(t.step, t.steps),
                      FormatInt(t.version), FormatNumber(t.reward_mean), FormatNumber(t.loss),
                      FormatNumber(t.staleness_mean), FormatNumber(t.tokens_per_second),
                      FormatShare(t.data_wait_fraction)});
    }
    out += "\n" + RenderTable({"TRAINERJOB", "PHASE", "STEP", "VERSION", "REWARD", "LOSS",
                               "STALENESS", "TOK/S", "WAIT"},
                              rows);
  }
  if (!view.dataflows.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const DataflowView& d : view.dataflows) {
      std::string eval = FormatNumber(d.eval_accuracy);
      if (d.eval_version) eval += " (v" + std::to_string(*d.eval_version) + ")";
      rows.push_back(
          {d.name, FormatInt(d.buffered), FormatNumber(d.trajectories_per_second), eval});
    }
    out += "\n" + RenderTable({"DATAFLOW", "BUFFERED", "TRAJ/S", "EVAL"}, rows);
  }
  if (!view.pools.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const PoolView& p : view.pools) {
      std::string regions;
      for (const RegionView& r : p.regions) {
        regions += (regions.empty() ? "" : " ") + r.name + "=" + FormatInt(r.replicas) + "/" +
                   FormatInt(r.ready);
      }
      rows.push_back({p.name, FormatInt(p.replicas), FormatInt(p.ready),
                      FormatNumber(p.tokens_per_second), regions.empty() ? "-" : regions});
    }
    out += "\n" + RenderTable({"ROLLOUTPOOL", "REPLICAS", "READY", "TOK/S", "REGIONS"}, rows);
  }
  return out;
}

size_t LineCount(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

std::string LiveRedraw(size_t previous_lines, const std::string& frame) {
  std::string out;
  if (previous_lines > 0) out += "\x1b[" + std::to_string(previous_lines) + "A\r";
  size_t start = 0;
  while (start < frame.size()) {
    size_t end = frame.find('\n', start);
    if (end == std::string::npos) end = frame.size();
    out += "\x1b[2K" + frame.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "\x1b[J";
  return out;
}

}  // namespace sluice::cli
