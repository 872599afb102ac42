// The eval line `sluice run` prints after every TrainerJob succeeded: how the evaluation accuracy
// of each TrainerJob's Dataflow moved during this run. Pure: the rows come in, text goes out.
//
// Input: the ProgressRows seen while following, in the order they were sampled. A row counts when
// it carries both eval_version and a finite eval_accuracy (the Dataflow's status.evaluation:
// the newest completed round, `accuracy` a share from 0 to 1). Per TrainerJob (row.trainer):
//   earliest  the lowest eval_version seen (the first row with it)
//   latest    the highest eval_version seen (the last row with it)
// Output, one line per TrainerJob with an evaluation, in the order the TrainerJobs first appear
// (percentages with one decimal):
//   two versions or more  "eval accuracy: before 12.5% -> after 41.0% (versions 0 -> 200)"
//   one version           "eval accuracy: 41.0% at version 200 (no later evaluation)"
//   none                  nothing
// Scripts can grep the prefix "eval accuracy: before X% -> after Y%". When more than one
// TrainerJob has an evaluation, each line ends with " [TRAINERJOB]".
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

// The earliest and latest evaluation of one TrainerJob's rows.
struct EvalSpan {
  std::string trainer;
  int64_t first_version = 0;
  double first_accuracy = 0;
  int64_t last_version = 0;
  double last_accuracy = 0;

  bool operator==(const EvalSpan&) const = default;
};

// One span per TrainerJob with at least one counted row, in order of first appearance.
std::vector<EvalSpan> EvalSpans(const std::vector<ProgressRow>& rows);

// A share as a percentage with one decimal: 0.125 -> "12.5", 0.41 -> "41.0", 1 -> "100.0".
std::string FormatPercent(double share);

// The eval lines described above, each ending with a newline; "" when no row has an evaluation.
std::string EvalSummary(const std::vector<ProgressRow>& rows);

}  // namespace sluice::cli
