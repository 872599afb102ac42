// When `sluice run` stops following, decided from the TrainerJobs' statuses. Pure.
//
//   kFailed     some TrainerJob has status.phase Failed (the first one, in manifest order): exit 1
//               with its name and why (FailureReason). A job whose Dataflow ran out of data
//               before spec.steps is Failed with reason DataExhausted (the operator's Starved).
//   kSucceeded  every TrainerJob has status.phase Succeeded: exit 0 with a summary.
//   kRunning    otherwise (also with no TrainerJob at all: the caller does not follow then).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

enum class ExperimentState { kRunning, kSucceeded, kFailed };

struct ExperimentOutcome {
  ExperimentState state = ExperimentState::kRunning;
  std::string failed;  // The Failed TrainerJob's name.
  std::string reason;  // FailureReason of it.
};

ExperimentOutcome DecideOutcome(const std::vector<nlohmann::json>& trainerjobs);

// Why a Failed TrainerJob failed, from status.conditions: the condition of type "Failed" with
// status "True" ("<reason>: <message>"), else the first condition with status "False" that has a
// message ("<type> <reason>: <message>"), else "no condition says why".
std::string FailureReason(const nlohmann::json& trainerjob);

// The lines printed when every TrainerJob succeeded, one per row (the last sample of each):
//   "tiny-grpo succeeded: 200/200 steps, version 200, reward 0.93"
std::string SuccessSummary(const std::vector<ProgressRow>& last_rows);

}  // namespace sluice::cli
