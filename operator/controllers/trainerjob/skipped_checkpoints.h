// TrainerJob status.skippedCheckpoints: the checkpoints a trainer's resume found damaged and
// skipped (rank 0 reports them in GET /v1/status "skippedCheckpoints"). The operator copies each
// new one into the status once and raises a CheckpointSkipped Warning event for it; the status
// remembers which were told, so a report read again on every reconcile raises nothing more.
//
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

namespace sluice::controllers {

// The most entries status.skippedCheckpoints keeps (the newest), and the longest reason.
inline constexpr size_t kMaxSkippedCheckpoints = 32;
inline constexpr size_t kMaxSkippedReason = 1024;

struct SkippedCheckpointsMerge {
  nlohmann::json status = nlohmann::json::array();  // The new status.skippedCheckpoints.
  std::vector<nlohmann::json> fresh;                // Entries not told before: one event each.
};

// `told`: the TrainerJob's status.skippedCheckpoints (anything but an array counts as empty);
// `reported`: rank 0's "skippedCheckpoints" (entries that are not {"step": integer, ...} are
// ignored). Entries are {"step", "reason"} with the reason cut to kMaxSkippedReason bytes.
SkippedCheckpointsMerge MergeSkippedCheckpoints(const nlohmann::json& told,
                                                const nlohmann::json& reported);

}  // namespace sluice::controllers
