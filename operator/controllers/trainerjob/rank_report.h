// Rank 0's GET /v1/status reply, folded into the TrainerJob's status.
//
// Pure function. Thread safety: values only.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace sluice::controllers::trainerjob {

// Sets status.step and status.version (ReportedProgress, final_progress.h), lastCheckpointStep,
// skippedCheckpoints (merged, skipped_checkpoints.h) and lastMetrics (the known metrics that are
// numbers) from `report`. Returns the skipped checkpoints new in this report, each
// {"step", "reason"}: the reconciler records a Warning Event for each. A `report` that is not an
// object changes nothing.
std::vector<nlohmann::json> ApplyRankZeroReport(const nlohmann::json& report,
                                                nlohmann::json& status);

}  // namespace sluice::controllers::trainerjob
