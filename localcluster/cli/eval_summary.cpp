#include "localcluster/cli/eval_summary.h"

#include <cmath>
#include <cstdio>

namespace sluice::cli {

std::vector<EvalSpan> EvalSpans(const std::vector<ProgressRow>& rows) {
  std::vector<EvalSpan> spans;
  for (const ProgressRow& row : rows) {
    if (!row.eval_version || !row.eval_accuracy || !std::isfinite(*row.eval_accuracy)) continue;
    const int64_t version = *row.eval_version;
    const double accuracy = *row.eval_accuracy;
    EvalSpan* span = nullptr;
    for (EvalSpan& s : spans) {
      if (s.trainer == row.trainer) span = &s;
    }
    if (span == nullptr) {
      spans.push_back({row.trainer, version, accuracy, version, accuracy});
      continue;
    }
    // Strictly lower: the first row with the lowest version stays.
    if (version < span->first_version) {
      span->first_version = version;
      span->first_accuracy = accuracy;
    }
    // At least as high: the last row with the highest version wins.
    if (version >= span->last_version) {
      span->last_version = version;
      span->last_accuracy = accuracy;
    }
  }
  return spans;
}

std::string FormatPercent(double share) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f", share * 100);
  return buf;
}

std::string EvalSummary(const std::vector<ProgressRow>& rows) {
  const std::vector<EvalSpan> spans = EvalSpans(rows);
  std::string out;
  for (const EvalSpan& s : spans) {
    std::string line = "eval accuracy: ";
    if (s.first_version == s.last_version) {
      line += FormatPercent(s.last_accuracy) + "% at version " + std::to_string(s.last_version) +
              " (no later evaluation)";
    } else {
      line += "before " + FormatPercent(s.first_accuracy) + "% -> after " +
              FormatPercent(s.last_accuracy) + "% (versions " + std::to_string(s.first_version) +
              " -> " + std::to_string(s.last_version) + ")";
    }
    if (spans.size() > 1) line += " [" + s.trainer + "]";
    out += line + "\n";
  }
  return out;
}

}  // namespace sluice::cli
