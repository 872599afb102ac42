// The eval lines `sluice run` prints after every TrainerJob succeeded: how each Dataflow's
// evaluation moved during this run. Pure: the Dataflow views come in, text goes out.
//
// Input: the DataflowViews seen while following, in the order they were sampled. A view counts
// when it carries both eval_version and a finite eval_accuracy (the Dataflow's
// status.evaluation: the newest completed round, `accuracy` a share from 0 to 1). Per Dataflow
// (view.name), the rounds compared are
//   earliest  the lowest eval_version seen (the first view with it)
//   latest    the highest eval_version seen (the last view with it)
// and every line of a Dataflow compares those same two rounds. Keyed by Dataflow, not by
// TrainerJob: an experiment training several Policies on one Dataflow (solve-and-verify's solver
// and verifier) gets its figures once.
//
// Output per Dataflow with an evaluation, in the order the Dataflows first appear (percentages
// with one decimal):
//   two versions or more  "eval accuracy: before 12.5% -> after 41.0% (versions 0 -> 200)"
//   one version           "eval accuracy: 41.0% at version 200 (no later evaluation)"
// then, for a solve-and-verify Dataflow whose rounds report the verifier (status.evaluation.
// policies[]: its reward is 1 when its verdict agrees with whether the solver's answer earned the
// full reward), one line per entry:
//   "verifier agreement: before 50.0% -> after 80.0% (on correct answers 0.0% -> 75.0%, on
//    wrong 100.0% -> 85.0%)"                           (one line; n/a where a split is absent)
//   "verifier agreement: 80.0% at version 200 (on correct answers 75.0%, on wrong 85.0%)"
// and, when the rounds report a tool-call share (multi-turn workflows):
//   "tool calls: before 10.0% -> after 60.0%"  or  "tool calls: 60.0% at version 200"
// A figure only one of the two rounds has is shown "at version" of that round. Other multi-policy
// workflows' policies[] entries are not printed (their rewards need not be agreements or shares).
// Scripts can grep the prefix "eval accuracy: before X% -> after Y%". When more than one Dataflow
// has an evaluation, each line ends with " [DATAFLOW]"; with several verifier entries (not a
// shape solve-and-verify produces), each agreement line names its Policy: "verifier agreement
// (NAME): ...".
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/cli/experiment_status.h"

namespace sluice::cli {

// One Dataflow's newest evaluation round as one sample saw it.
struct EvalPoint {
  int64_t version = 0;
  double accuracy = 0;
  std::optional<double> tool_call_share = std::nullopt;
  std::vector<EvalPolicyView> policies = {};

  bool operator==(const EvalPoint&) const = default;
};

// The round a view shows: nullopt without eval_version or with a missing or non-finite accuracy.
std::optional<EvalPoint> EvalPointOf(const DataflowView& view);

// The earliest and latest evaluation of one Dataflow's views.
struct EvalSpan {
  std::string dataflow;
  std::string workflow;  // Of the latest view that counted.
  EvalPoint first;
  EvalPoint last;

  bool operator==(const EvalSpan&) const = default;
};

// One span per Dataflow with at least one counted view, in order of first appearance.
std::vector<EvalSpan> EvalSpans(const std::vector<DataflowView>& views);

// A share as a percentage with one decimal: 0.125 -> "12.5", 0.41 -> "41.0", 1 -> "100.0".
std::string FormatPercent(double share);

// The eval lines described above, each ending with a newline; "" when no view has an evaluation.
std::string EvalSummary(const std::vector<DataflowView>& views);

}  // namespace sluice::cli
