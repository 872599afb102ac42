// Which evaluation rounds `sluice run` still waits for once every TrainerJob succeeded. Pure: the
// objects come in as JSON.
//
// Why: a Dataflow with spec.evaluation queues an evaluation round each time its primary policy's
// version reaches a multiple of spec.evaluation.everyVersions, and the rollout pool finishes that
// round after the trainer has exited. The round at the final version is the "after" of the eval
// line (eval_summary.h), so the run keeps sampling until it shows up (or --eval-wait passes).
//
// A round is pending for each pair of a Dataflow and a TrainerJob where:
//   - the Dataflow has spec.evaluation (an object) whose everyVersions is > 0; absent means the
//     CRD's default, 10;
//   - the TrainerJob's spec.dataflowRef.name is the Dataflow's metadata.name;
//   - the TrainerJob's status.version V is known, > 0 and a multiple of everyVersions (otherwise
//     no round comes at V: nothing to wait for);
//   - the Dataflow's status.evaluation.version is absent or below V.
// Missing or mistyped fields count as absent.
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {

struct PendingEvaluation {
  std::string dataflow;
  std::string trainer;
  int64_t version = 0;               // The TrainerJob's final status.version.
  std::optional<int64_t> evaluated;  // The Dataflow's status.evaluation.version; none yet: nullopt.

  bool operator==(const PendingEvaluation&) const = default;
};

// In the order of `dataflows`, then of `trainerjobs`.
std::vector<PendingEvaluation> PendingEvaluations(const std::vector<nlohmann::json>& trainerjobs,
                                                  const std::vector<nlohmann::json>& dataflows);

// "version 200 of dataflow arithmetic (newest evaluated: 150)", "(none evaluated yet)"; several
// joined with ", ".
std::string DescribePending(const std::vector<PendingEvaluation>& pending);

}  // namespace sluice::cli
